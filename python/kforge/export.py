"""`python -m kforge.export BUNDLE PLAN_JSON -o model_new.py`

Writes a drop-in KernelBench solution: `class ModelNew` with Model's constructor, parameters and buffers (its
state_dict loads either way), whose forward launches the kforge plan. The file carries the problem's source
and the plan, so it still works when copied away from the bundle; it needs `kforge` (with `kforge._core`)
importable only when forward first runs."""
import argparse
import json
import sys
from pathlib import Path

import torch

from kforge.bundle import read_task
from kforge.problem import load_problem

TEMPLATE = '''"""kforge drop-in solution for {name} (exported from {source}).

ModelNew subclasses the problem's own Model, so it has the same constructor and the same parameters and
buffers; only forward differs: it launches kforge's generated kernels (no PyTorch op besides allocating the
outputs with torch.empty)."""
import json

import torch

_PROBLEM_SOURCE = {problem_source}
_PLAN_JSON = {plan_json}
# The graph's inputs and params (name, dtype, shape): params are passed to the plan in this order.
_SIGNATURE = json.loads({signature})
# Modules whose forward depends on training mode (BatchNorm with running statistics): the plan computes their
# training-mode result, so it must not be used once they are switched to eval().
_TRAIN_MODE_MODULES = {train_mode_modules}

_problem = {{"__name__": __name__ + "._problem"}}
exec(compile(_PROBLEM_SOURCE, {source!r}, "exec"), _problem)
_kforge = None


def _tensors(inputs):
    """The tensors of forward's arguments: the problem's Python numbers among get_inputs() are constants of the
    plan (kforge.problem.bind_numbers)."""
    return [x for x in inputs if isinstance(x, torch.Tensor)]


def _attr(module, qualname):
    for part in qualname.split("."):
        module = getattr(module, part)
    return module


class ModelNew(_problem["Model"]):
    def forward(self, *inputs):
        global _kforge
        if _kforge is None:
            import kforge._core
            from kforge.launch import KforgeFunction
            _kforge = KforgeFunction(kforge._core.Runner(_PLAN_JSON), _SIGNATURE)
        for name in _TRAIN_MODE_MODULES:
            if not _attr(self, name).training:
                raise RuntimeError(f"kforge plan computes {{name}} in training mode, but it is in eval mode")
        params = [_attr(self, p["name"]) for p in _SIGNATURE["params"]]
        outputs = _kforge(_tensors(inputs), params)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)
'''


def train_mode_modules(model) -> list[str]:
    """Modules that compute differently in eval mode, by PyTorch's rules for BatchNorm and InstanceNorm."""
    norms = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm)
    return [name for name, m in model.named_modules() if isinstance(m, norms) and m.track_running_stats]


def export(bundle, plan_path) -> str:
    task = read_task(bundle)
    plan = Path(plan_path).read_text()
    json.loads(plan)  # a broken plan fails now, not at the first forward of the exported model
    problem = load_problem(task["source"], task.get("precision"))
    graph = task["graph"]
    signature = {"inputs": graph["inputs"], "params": graph["params"]}
    return TEMPLATE.format(name=task["name"], source=task["source"], problem_source=repr(problem.path.read_text()),
                           plan_json=repr(plan), signature=repr(json.dumps(signature)),
                           train_mode_modules=repr(train_mode_modules(problem.build_model())))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.export")
    parser.add_argument("bundle")
    parser.add_argument("plan", help="plan JSON file")
    parser.add_argument("-o", "--out", required=True, help="the ModelNew file to write")
    args = parser.parse_args(argv)
    Path(args.out).write_text(export(args.bundle, args.plan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
