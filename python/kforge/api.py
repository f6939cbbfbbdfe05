"""kforge from Python, on a model object:

    import kforge.api
    fast = kforge.api.optimize(model, example_inputs, budget=16, tier="strict")   # an nn.Module
    compiled = torch.compile(model, backend="kforge")

`optimize` runs kforge's search on the model as a task (the environment's hidden sets drawn like the example
inputs: standard normal floats of their shapes, the examples' own values for integer and boolean inputs) and returns
a module whose forward launches the best plan of the tier asked for, with the model's own parameters. Where kforge
cannot take the model (an op its importer does not express, no plan passing the tier, no CUDA GPU) it warns, naming
why, and returns the model itself: PyTorch runs what kforge does not cover. The `kforge` backend of torch.compile
does the same for each graph dynamo captures, and where a graph holds ops kforge's importer lacks, it cuts the graph
into the largest pieces of ops kforge has (torch.fx's capability-based partitioner) and optimizes each piece, the
ops between them running in PyTorch."""
import copy
import json
import operator
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


class Unsupported(Exception):
    """The model holds an op kforge's importer does not express (the message names it)."""


def optimize(model: torch.nn.Module, example_inputs, budget: int = 16, tier: str = "strict", db: str = "kforge.db",
             name: str = "model") -> torch.nn.Module:
    """kforge's best plan for `model` as a module, or `model` itself with a warning saying why not."""
    try:
        return attempt(model, example_inputs, budget, tier, db, name)
    except Unsupported as e:
        return fallback(model, str(e))


def attempt(model, example_inputs, budget=16, tier="strict", db="kforge.db", name="model"):
    """optimize's work: the plan's module, `model` itself with a warning where a GPU or a passing plan is lacking,
    or Unsupported where the importer cannot express the model."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}")
    if not torch.cuda.is_available():
        return fallback(model, "kforge needs a CUDA GPU to search and run plans (none is visible)")
    from kforge import session
    with tempfile.TemporaryDirectory(prefix="kforge-api-") as tmp:  # a fresh folder: no plan of another run
        folder = Path(tmp)
        try:
            # No torch.compile baseline: the caller asked for a module, not a comparison, and inside the kforge
            # backend a second torch.compile of the graph would run dynamo within dynamo.
            report = session.optimize_problem(problem_of(model, example_inputs, name), budget, db, folder,
                                              progress=False, policy="local", compile_baseline=False)
        except ImportProblemError as e:
            raise Unsupported(str(e)) from e
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


def supported(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    """Whether kforge's importer has a handler for `node`'s op (its arguments may still be refused: the piece it
    lands in then runs in PyTorch). A getitem goes with what it picks from."""
    from kforge import fx_ops
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)) in fx_ops.MODULES
    if node.op == "call_function" and node.target is operator.getitem:
        source = node.args[0]
        return isinstance(source, torch.fx.Node) and supported(gm, source)
    if node.op == "call_function":
        return node.target in fx_ops.FUNCTIONS
    return node.op == "call_method" and node.target in fx_ops.METHODS


def partitioned(gm: torch.fx.GraphModule, example_inputs, compile_piece) -> torch.fx.GraphModule | None:
    """`gm` with each largest piece of ops kforge has replaced by compile_piece(piece,
    its example inputs, its name); the ops between the pieces stay PyTorch's. None where no piece is found."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupport
    from torch.fx.passes.shape_prop import ShapeProp

    class Support(OperatorSupport):
        def is_node_supported(self, submodules, node):
            return supported(gm, node)

    gm = copy.deepcopy(gm)  # the partitioner rewrites the module it cuts: the caller's stays whole
    # Single ops too (one product, one convolution, a module call, which the partitioner's own count of compute
    # ops leaves out), but no piece of getitems alone.
    partitioner = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
    pieces = [p for p in partitioner.propose_partitions() if any(n.target is not operator.getitem for n in p.nodes)]
    if not pieces:
        return None
    fused = partitioner.fuse_partitions(pieces)
    ShapeProp(fused).propagate(*example_inputs)
    for node in fused.graph.nodes:
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        metas = [a.meta.get("tensor_meta") if isinstance(a, torch.fx.Node) else None for a in node.args]
        if any(m is None or not hasattr(m, "shape") for m in metas):  # a piece fed a non-tensor: left to PyTorch
            continue
        examples = [torch.empty(m.shape, dtype=m.dtype) for m in metas]
        setattr(fused, node.target, compile_piece(fused.get_submodule(node.target), examples, node.target))
    fused.recompile()
    return fused


BACKEND_OPTIONS = {"budget": 16, "tier": "strict", "db": "kforge.db"}


def is_model_state(node: torch.fx.Node, example) -> bool:
    """Whether dynamo lifted this graph input from the module: a parameter, or a buffer (its source names the
    module's `_buffers`; the placeholder's name says the same where the source is not kept)."""
    if isinstance(example, torch.nn.Parameter):
        return True
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", None)
    where = (name() if callable(name) else name) if name is not None else node.name
    return "buffers" in str(where)


def with_state_as_attributes(gm: torch.fx.GraphModule, example_inputs) -> tuple[torch.fx.GraphModule, list[int]]:
    """`gm` with the module's parameters and buffers, which dynamo passes as graph inputs, held as its own
    attributes (the same tensor objects: an optimizer's updates are seen), and the positions of the inputs left.
    Why: as inputs, kforge's hidden sets would draw them like data (unit normal weights, negative running
    variances), so plans would be checked and chosen on values the model never holds."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    state = [i for i, (n, t) in enumerate(zip(placeholders, example_inputs)) if is_model_state(n, t)]
    if not state:
        return gm, list(range(len(example_inputs)))
    gm = copy.deepcopy(gm)  # dynamo's own graph stays as captured (its fallback)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i in state:
        name = f"kforge_state_{i}"
        if isinstance(example_inputs[i], torch.nn.Parameter):
            gm.register_parameter(name, example_inputs[i])
        else:
            gm.register_buffer(name, example_inputs[i])
        with gm.graph.inserting_before(placeholders[i]):
            attribute = gm.graph.get_attr(name)
        placeholders[i].replace_all_uses_with(attribute)
        gm.graph.erase_node(placeholders[i])
    gm.recompile()
    return gm, [i for i in range(len(example_inputs)) if i not in state]


def backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None):
    """torch.compile's `kforge` backend: each graph dynamo captures, optimized by kforge where it can be, or cut
    into the pieces kforge can take (partitioned); dynamo's own graph runs otherwise. Dynamo's graphs return a
    tuple: so does the plan. `torch.compile(model, backend="kforge", options={"budget": 8, "tier": "relaxed"})`
    sets the search (BACKEND_OPTIONS: the defaults). The module's parameters and buffers are the task's parameters
    (with_state_as_attributes); in training mode a BatchNorm's running statistics are not updated by a plan."""
    unknown = set(options or {}) - set(BACKEND_OPTIONS)
    if unknown:
        raise ValueError(f"kforge backend: unknown options {sorted(unknown)} (known: {sorted(BACKEND_OPTIONS)})")
    settings = {**BACKEND_OPTIONS, **(options or {})}
    stateful, kept = with_state_as_attributes(gm, example_inputs)
    data = [example_inputs[i] for i in kept]
    # Floats are drawn afresh like the examples (only their shapes matter); integers (indices) keep their values.
    examples = [torch.empty(t.shape, dtype=t.dtype) if t.is_floating_point() else t.detach().cpu() for t in data]
    try:
        module = attempt(stateful, examples, name="graph", **settings)
    except Unsupported as e:
        pieces = None
        try:
            pieces = partitioned(stateful, data,
                                 lambda piece, shapes, name: optimize(piece, shapes, name=name, **settings))
        except Exception as cut:  # noqa: BLE001 -- a graph the partitioner cannot cut: it runs as dynamo captured it
            warnings.warn(f"kforge: the graph could not be cut into pieces: {type(cut).__name__}: {cut}", stacklevel=2)
        module = pieces if pieces is not None else fallback(gm, str(e))
    except Exception as e:  # noqa: BLE001 -- dynamic shapes, a search error: the graph runs as dynamo captured it
        module = fallback(gm, f"{type(e).__name__}: {e}")
    if module is gm:
        return gm.forward

    def run(*args):
        out = module(*[args[i] for i in kept])
        return out if isinstance(out, tuple) else (out,)
    return run


def register() -> None:
    """`backend="kforge"` for torch.compile once this module is imported. An installed package also declares it as a
    `torch_dynamo_backends` entry point (pyproject.toml), so torch finds it with no import: torch then imports this
    module and registers the backend itself, and registering here too would be refused as a duplicate."""
    try:
        from torch._dynamo.backends import registry
    except ImportError:  # a torch without dynamo
        return
    if "kforge" in registry._COMPILER_FNS or getattr(registry, "_BACKENDS", {}).get("kforge") is not None:
        return
    registry.register_backend(compiler_fn=backend, name="kforge")


register()
