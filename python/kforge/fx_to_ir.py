"""Model -> high-level IR graph: trace with torch.fx, get static shapes with ShapeProp, convert node by node.

`python -m kforge.fx_to_ir PROBLEM.py` prints the IR JSON (a CPU-side check of one problem)."""
import contextlib
import functools
import inspect
import io
import json
import math
import operator
import sys

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.node import _get_qualified_name
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from kforge import fx_ops
from kforge.errors import ImportProblemError
from kforge.fx_ops import ALIAS, STATIC, compositions, einops_ops
from kforge.fx_ops.common import MODULES, check_inplace, dense, filled, on
from kforge.graph_builder import GraphBuilder, Val
from kforge.problem import load_problem


def is_static(v) -> bool:
    if isinstance(v, (list, tuple)):  # torch.Size too; a namedtuple of tensors is not static
        return all(is_static(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, str, torch.dtype, torch.device))


class _StaticShapeProp(ShapeProp):
    """ShapeProp that also keeps the non-tensor results and marks views. It runs on fake tensors, so a value
    that depends on tensor data (x.sum().item()) raises instead of being baked in, and the real model is not
    touched (a BatchNorm's running stats stay as they are)."""

    def run_node(self, n):
        self.current = n  # for the error message
        result = super().run_node(n)
        if is_static(result):
            n.meta[STATIC] = result
        elif isinstance(result, torch.Tensor) and n.all_input_nodes:
            # The input is still alive here, so equal storages mean a view, never a reused allocation.
            src = self.env.get(n.all_input_nodes[0])
            if isinstance(src, torch.Tensor) and src.untyped_storage()._cdata == result.untyped_storage()._cdata:
                n.meta[ALIAS] = True
        return result


class _Tracer(torch.fx.Tracer):
    """torch.fx.symbolic_trace's tracer, but buffers become graph values like parameters do. By default FX runs
    an op on a buffer alone (self.scale.exp()) while tracing and bakes its result in as a constant the model does
    not have, or lets an in-place op on a buffer happen once at trace time instead of at every call."""
    proxy_buffer_attributes = True

    def is_leaf_module(self, m, qualname) -> bool:
        # A torch.nn module kforge has no handler for (nn.TransformerEncoderLayer, nn.Softmax2d, nn.Bilinear...) is
        # traced through: its forward is calls kforge may know, where as a leaf it would be refused whole.
        if isinstance(m, einops_ops.LEAF_LAYERS):
            return True
        return super().is_leaf_module(m, qualname) and type(m) in MODULES


def trace(model, example_inputs, file) -> torch.fx.GraphModule:
    """Model.forward as an FX graph of torch-level calls: torch.fx's symbolic trace, or where it stops at Python
    control flow on shapes, dynamo's graph capture on the example inputs (trace_by_dynamo)."""
    # einops' functions stay whole (its own code takes a proxy for no tensor it knows): fx_ops/einops_ops.py.
    tracer = _Tracer(autowrap_modules=(math, *einops_ops.WRAPPED_MODULES))
    attributes = [(m, dict(vars(m))) for m in model.modules()]
    try:
        graph = tracer.trace(model)
    except Exception as e:  # noqa: BLE001 -- any failure of the symbolic trace: dynamo's capture is the other way
        restore(attributes)
        return trace_by_dynamo(model, example_inputs, file, f"{type(e).__name__}: {e}")
    restore(attributes, keep_new=True)  # FX's own constants (_tensor_constantN) are copied into the graph module
    gm = torch.fx.GraphModule(tracer.root, graph, type(model).__name__)
    restore(attributes)
    return gm


def restore(attributes, keep_new: bool = False) -> None:
    """The modules' attributes as they were before a symbolic trace: forward's own assignments (`self.h0 =
    self.h0.to(x.device)`, an RNN's initial state) ran on proxies while tracing and left them in the model, where
    the graph's get_attr, the reference run and the baselines would read them. The graph repeats the assignment
    at every call; the value it starts from is the model's own."""
    for module, before in attributes:
        now = vars(module)
        for name in [] if keep_new else [n for n in now if n not in before]:
            del now[name]
        for name, value in before.items():
            if now.get(name) is not value:
                now[name] = value


def trace_by_dynamo(model, example_inputs, file, why: str) -> torch.fx.GraphModule:
    """torch.fx's symbolic trace cannot branch on a shape (`if x.size(1) > 4`, `range(x.size(0))`: a layer loop over
    windows, an RNN cell over time steps); dynamo's graph capture runs forward on the example inputs' shapes and
    records the calls on the path taken, loops unrolled, as the same torch-level calls. Its attributes are
    renamed: each is mapped back to the model's own parameter or buffer by identity, so that params keep their
    names (a tensor that is neither stays a constant of the graph). In-place updates of buffers that no result
    reads (BatchNorm's batch counter) are side effects forward's output does not see: dropped, as the importer
    ignores the running statistics. Data-dependent control flow stops dynamo too: then the problem is refused."""
    import torch._dynamo
    try:
        captured, _ = torch._dynamo.export(model, aten_graph=False)(*example_inputs)
    except Exception as e:  # noqa: BLE001
        detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ImportProblemError(file, f"torch.fx cannot trace Model.forward ({why.splitlines()[0][:300]}), nor can "
                                       f"dynamo's graph capture (data-dependent control flow?): {detail[:300]}") from e
    finally:
        torch._dynamo.reset()
    own = {id(t): name for name, t in named_tensors(model)}
    graph = captured.graph
    reads = {}  # get_attr target -> its nodes' users, all of them
    for node in graph.nodes:
        if node.op == "get_attr":
            reads.setdefault(node.target, []).extend(node.users)
    for node in reversed(list(graph.nodes)):
        source = node.args[0] if node.op == "call_method" and node.args else None
        if source is not None and node.target.endswith("_") and not node.users and getattr(source, "op", None) == "get_attr" and \
                reads[source.target] == [node]:  # the buffer's only use is this update, which nothing reads
            graph.erase_node(node)
            graph.erase_node(source)
    for node in graph.nodes:
        if node.op == "get_attr":
            t = lookup(captured, node.target)
            if id(t) in own:
                node.target = own[id(t)]
            else:
                setattr(model, node.target, t)  # read as a constant of the graph (convert_node)
    return torch.fx.GraphModule(model, graph, type(model).__name__)


def propagate(gm, example_inputs, file) -> None:
    prop = _StaticShapeProp(gm, fake_mode=FakeTensorMode())
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # ShapeProp prints a traceback before it re-raises
            prop.propagate(*example_inputs)
    except Exception as e:
        cause = e.__cause__ or e  # ShapeProp wraps the error in its own RuntimeError
        node = getattr(prop, "current", None)
        raise ImportProblemError(file, f"running Model.forward on example inputs failed: {type(cause).__name__}: "
                                 f"{cause}", node and node.name, node and describe(gm, node)) from e


def unpack_tuple_results(gm) -> None:
    """A forward that returns a tuple-valued op's result as it is (`return torch.max(x, dim=1)`: values and
    indices) returns its parts: each becomes a getitem of its own, as if forward had unpacked it."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    returned = out.args[0]
    results = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    flat, unpacked = [], False
    for r in results:
        meta = r.meta.get("tensor_meta") if isinstance(r, torch.fx.Node) else None
        if not isinstance(meta, (tuple, list)) or isinstance(meta, TensorMetadata):
            flat.append(r)
            continue
        unpacked = True
        with gm.graph.inserting_before(out):
            for i, part in enumerate(meta):
                item = gm.graph.call_function(operator.getitem, (r, i))
                item.meta["tensor_meta"] = part
                flat.append(item)
    if unpacked:
        out.args = (tuple(flat),)


def describe(gm, node) -> str:
    if node.op == "call_function":
        return _get_qualified_name(node.target)
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_module":
        return f"{type(gm.get_submodule(node.target)).__name__} module '{node.target}'"
    return f"{node.op} {node.target}"


def lookup(obj, qualname):
    return functools.reduce(getattr, qualname.split("."), obj)


def named_tensors(model) -> list[tuple[str, torch.Tensor]]:
    """The model's tensors by qualified name: parameters, buffers, and plain tensor attributes its __init__ made
    (`self.h0 = torch.randn(...)`, an RNN's initial state), which a fresh Model, and so a ModelNew, makes too."""
    plain = [(f"{prefix}.{name}" if prefix else name, value)
             for prefix, module in model.named_modules(remove_duplicate=False)
             for name, value in vars(module).items() if isinstance(value, torch.Tensor) and not name.startswith("_")]
    return [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False), *plain]


def state_names(model) -> set[str]:
    return {name for name, _ in named_tensors(model)}


# A constant tensor of forward (torch.tensor([...]) there) is written into the graph element by element: the IR has
# no literal arrays, and a fresh Model, which ModelNew is, lacks the attribute FX stored it in.
MAX_LITERAL_ELEMENTS = 64


def arithmetic_step(t: torch.Tensor):
    """The step of a 1-D tensor whose elements are start + k step, exactly as float32 computes them; else None."""
    if t.ndim != 1 or t.numel() < 2 or t.dtype not in (torch.float32, torch.int64, torch.int32):
        return None
    step = (t[1] - t[0]).item()
    k = torch.arange(t.numel(), dtype=torch.float32)
    made = (k * float(step) + float(t[0].item())).to(t.dtype)
    return step if torch.equal(made, t) else None


def literal_tensor(b, t: torch.Tensor):
    """`t` as IR nodes: one `const` broadcast where every element is the same, else each element a `const`,
    concatenated and reshaped."""
    values = t.reshape(-1).tolist()
    if all(v == values[0] for v in values):
        return filled(b, values[0])  # the constant's node: its shape and dtype are t's
    parts = [b.emit_tmp("reshape", [b.const(v, t.dtype)], {"shape": [1]}, t.dtype, (1,)) for v in values]
    flat = b.emit_tmp("cat", parts, {"dim": 0}, t.dtype, (len(values),))
    return b.emit("reshape", [flat], {"shape": list(t.shape)})


@on(torch.tensor)
def tensor_call(b, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor(...) in forward as dynamo's capture records it (torch.fx folds it into a constant instead): its
    values are static, written as literal_tensor writes them."""
    if isinstance(data, (Val, torch.Tensor)):
        b.refuse("torch.tensor of a tensor is not supported (use clone())")
    return constant_tensor(b, torch.tensor(data, dtype=dtype))


def constant_tensor(b, t: torch.Tensor):
    """A tensor made in forward (not by the model's __init__), which a fresh Model (and so ModelNew) lacks: a 0-d
    one a `const`, a small one literal_tensor's nodes, an arithmetic progression an arange; larger ones refused."""
    if t.ndim == 0:
        return b.const(t.item(), t.dtype)
    if t.numel() <= MAX_LITERAL_ELEMENTS:
        return literal_tensor(b, t)
    if (step := arithmetic_step(t)) is not None:  # torch.arange(n) folded by FX into a constant
        return compositions.progression(b, t.numel(), t[0].item(), step, t.dtype)
    b.refuse(f"a tensor of {t.numel()} elements made in forward (torch.tensor(...)), not by the model's __init__, "
             f"is supported up to {MAX_LITERAL_ELEMENTS} elements; make it in __init__ or register it as a buffer")


def convert_node(b, gm, state, node, values):
    """The value of one FX node: a Val, a static Python value, or a fx_ops.Multi."""
    if node.op == "placeholder":
        if "tensor_meta" not in node.meta:
            b.refuse("forward argument is not a tensor")
        return b.add_input(node.name, node.meta["tensor_meta"].dtype, node.meta["tensor_meta"].shape)
    if STATIC in node.meta:
        return node.meta[STATIC]
    if node.op == "get_attr":
        t = lookup(gm, node.target)
        if node.target in state:
            return b.param(node.target, t.dtype, t.shape)
        # Any other tensor FX met (torch.tensor(2.0) in forward) it stored as a new attribute `_tensor_constantN`.
        return constant_tensor(b, t)
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        handler = fx_ops.MODULES.get(type(module))
        args = (module, *args)
    else:
        table = fx_ops.FUNCTIONS if node.op == "call_function" else fx_ops.METHODS
        handler = table.get(node.target)
        if handler is None and node.op == "call_method" and node.target.endswith("_") and node.target[:-1] in table:
            # An in-place method (x.masked_fill_(...), as PyTorch's own mask helpers write) is its out-of-place form
            # where nothing else reads the memory it writes (check_inplace refuses it otherwise).
            check_inplace(b, True)
            handler = table[node.target[:-1]]
    if handler is None:
        b.refuse("not an op of kforge's IR (docs/interfaces.md lists them)")
    try:
        inspect.signature(handler).bind(b, *args, **kwargs)
    except TypeError as e:
        b.refuse(f"arguments kforge does not understand: {e}")
    return handler(b, *args, **kwargs)


def convert(model, example_inputs, file) -> dict:
    """The IR graph of `model` called on inputs shaped like `example_inputs`; ImportProblemError if any node
    cannot be expressed."""
    state = state_names(model)  # before tracing, which adds attributes to the model
    gm = trace(model, example_inputs, file)
    propagate(gm, example_inputs, file)
    unpack_tuple_results(gm)
    b = GraphBuilder(file, {n.name for n in gm.graph.nodes} | state)
    values = {}
    for node in gm.graph.nodes:
        b.at(node, describe(gm, node))
        if node.op == "output":
            results = node.args[0] if isinstance(node.args[0], (tuple, list)) else (node.args[0],)
            for r in results:
                if isinstance(r, torch.fx.Node):
                    values[r] = dense(b, values[r])
                if not isinstance(r, torch.fx.Node) or not isinstance(values[r], Val):
                    b.refuse("forward must return a tensor or a tuple of tensors")
                b.add_output(values[r])
        elif node.target is operator.getitem and not node.users:
            continue  # a part of a tuple nothing reads (`y, indices = F.max_pool2d(..., return_indices=True)`)
        else:
            values[node] = convert_node(b, gm, state, node, values)
    return b.graph()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m kforge.fx_to_ir PROBLEM.py", file=sys.stderr)
        return 2
    try:
        problem = load_problem(argv[0])
        model = problem.build_model()
        graph = convert(model, problem.draw_inputs(0, "cpu"), problem.path)
    except ImportProblemError as e:
        print(f"kforge: {e}", file=sys.stderr)
        return 1
    print(json.dumps(graph, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
