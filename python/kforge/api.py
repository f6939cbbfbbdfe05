"""kforge from Python, on a model object:

    import kforge.api
    fast = kforge.api.optimize(model, example_inputs, budget=16, tier="strict")   # an nn.Module
    compiled = torch.compile(model, backend="kforge")

`optimize` runs kforge's search on the model as a task (the environment's hidden sets drawn like the example
inputs: standard normal floats of their shapes, the examples' own values for integer and boolean inputs) and returns
a module whose forward launches the best plan of the tier asked for, with the model's own parameters. Where kforge
cannot take the model (an op its importer does not express, no plan passing the tier, no CUDA GPU) it warns, naming
why, and returns the model itself: PyTorch runs what kforge does not cover. The `kforge` backend of torch.compile
does the same for each graph dynamo captures."""
import copy
import json
import tempfile
import types
import warnings
from pathlib import Path

import torch

from kforge.errors import ImportProblemError
from kforge.fx_to_ir import lookup
from kforge.problem import Problem

TIERS = ("strict", "relaxed")


def problem_of(model: torch.nn.Module, example_inputs, name: str = "model") -> Problem:
    """`model` as a KernelBench-style problem held in memory: Model() is a copy of it (its weights as they are now),
    get_inputs() draws inputs like the examples."""
    examples = [t.detach() for t in example_inputs]
    if not all(isinstance(t, torch.Tensor) for t in examples):
        raise TypeError("example_inputs must be tensors")
    frozen = copy.deepcopy(model).cpu()

    def get_inputs():
        return [torch.randn(t.shape, dtype=t.dtype) if t.is_floating_point() else t.cpu().clone() for t in examples]

    module = types.ModuleType(f"kforge_model_{name}")
    module.Model = lambda: copy.deepcopy(frozen)
    module.get_inputs, module.get_init_inputs = get_inputs, lambda: []
    return Problem(Path(f"{name}.py"), module)


class KforgeModule(torch.nn.Module):
    """Runs a kforge plan with the parameters and buffers of `model` (kept as its submodule, so that `.to`, the
    state dict and training-mode checks follow it)."""

    def __init__(self, model: torch.nn.Module, plan_json: str, graph: dict):
        super().__init__()
        import kforge._core as core
        from kforge.launch import KforgeFunction
        self.model = model
        self.signature = {"inputs": graph["inputs"], "params": graph["params"]}
        self.plan = KforgeFunction(core.Runner(plan_json), self.signature)

    def forward(self, *inputs):
        params = [lookup(self.model, p["name"]) for p in self.signature["params"]]
        outputs = self.plan([t for t in inputs if isinstance(t, torch.Tensor)], params)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def optimize(model: torch.nn.Module, example_inputs, budget: int = 16, tier: str = "strict", db: str = "kforge.db",
             name: str = "model") -> torch.nn.Module:
    """kforge's best plan for `model` as a module, or `model` itself with a warning saying why not."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}")
    if not torch.cuda.is_available():
        return fallback(model, "kforge needs a CUDA GPU to search and run plans (none is visible)")
    from kforge import session
    with tempfile.TemporaryDirectory(prefix="kforge-api-") as tmp:  # a fresh folder: no plan of another run
        folder = Path(tmp)
        try:
            report = session.optimize_problem(problem_of(model, example_inputs, name), budget, db, folder,
                                              progress=False, policy="local")
        except ImportProblemError as e:
            return fallback(model, str(e))
        # The relaxed tier's own plan only where its fresh check passed (the report then carries its kb timing);
        # otherwise the best plan stands for both tiers.
        own_relaxed = tier == "relaxed" and "relaxed_kb" in report
        plan_file = folder / name / ("relaxed_plan.json" if own_relaxed else "best_plan.json")
        passed = report.get("relaxed_tier" if tier == "relaxed" else "tier")
        if passed not in (("strict", "relaxed") if tier == "relaxed" else ("strict",)) or not plan_file.exists():
            return fallback(model, f"no plan passed the {tier} tier ({report.get('error') or passed})")
        graph = json.loads((folder / name / "task.json").read_text())["graph"]
        return KforgeModule(model, plan_file.read_text(), graph)


def fallback(model, why: str):
    warnings.warn(f"kforge: running the model in PyTorch: {why}", stacklevel=3)
    return model


def backend(gm: torch.fx.GraphModule, example_inputs):
    """torch.compile's `kforge` backend: each graph dynamo captures, optimized by kforge (strict tier, budget 16)
    where it can be; dynamo's own graph runs otherwise. Dynamo's graphs return a tuple: so does the plan."""
    try:
        module = optimize(gm, [torch.empty(t.shape, dtype=t.dtype) for t in example_inputs], name="graph")
    except Exception as e:  # noqa: BLE001 -- dynamic shapes, a search error: the graph runs as dynamo captured it
        module = fallback(gm, f"{type(e).__name__}: {e}")
    if module is gm:
        return gm.forward

    def run(*args):
        out = module(*args)
        return out if isinstance(out, tuple) else (out,)
    return run


try:
    from torch._dynamo import register_backend
    register_backend(compiler_fn=backend, name="kforge")
except (ImportError, RuntimeError):  # an old torch, or registered already (a re-import)
    pass
