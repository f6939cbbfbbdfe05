"""What every family of FX-to-IR handlers shares: the registration tables, the argument helpers, and the
elementwise emitters (unary, binary) that decompositions in other families reuse."""
import torch

from kforge.dtypes import HALF, TORCH_TO_IR
from kforge.graph_builder import Val

FUNCTIONS, METHODS, MODULES = {}, {}, {}

# node.meta keys that fx_to_ir's shape propagation sets.
STATIC = "kforge_static"  # a Python value computed from shapes alone (x.size(0), x.dtype)
ALIAS = "kforge_alias"    # the result shares memory with the node's first input (a view, contiguous())


def on(*targets):
    """Register a handler for functions (callables) and Tensor methods (strings)."""
    def register(handler):
        for t in targets:
            (METHODS if isinstance(t, str) else FUNCTIONS)[t] = handler
        return handler
    return register


def on_module(*classes):
    def register(handler):
        MODULES.update(dict.fromkeys(classes, handler))
        return handler
    return register


class Multi:
    """A tuple result (torch.max(x, dim)): nothing is emitted until a getitem or field access picks a part,
    which becomes its own op (values -> amax, indices -> argmax)."""
    def __init__(self, *parts, fields=()):
        self.parts, self.fields = parts, fields


def filled(b, value) -> Val:
    """A tensor of one value in the current node's shape and dtype (PyTorch's): a broadcast constant."""
    return b.emit("expand", [b.const(value, b.out_dtype)], {"shape": list(b.out_shape)})


def dense(b, v):
    """`v` itself where it is a value kept in a cheaper form for products (matmul.DiagonalMatrix), read as a tensor;
    anything else as it is."""
    return v.dense(b) if hasattr(v, "dense") else v


def tensor(b, v, what="input") -> Val:
    v = dense(b, v)
    if not isinstance(v, Val):
        b.refuse(f"{what} must be a tensor, got {type(v).__name__}")
    return v


def norm_dim(d: int, ndim: int) -> int:
    return d + max(ndim, 1) if d < 0 else d  # PyTorch lets a 0-d tensor use dim 0 and -1


def norm_dims(dim, ndim: int) -> list[int]:
    """None, () and [] mean every dim, written `[]` in the IR."""
    if dim is None:
        return []
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({norm_dim(d, ndim) for d in dims})


def varargs(positional, keyword):
    """x.permute(0, 2, 1), x.permute((0, 2, 1)) and torch.permute(x, dims=(0, 2, 1)) alike."""
    if keyword is not None:
        return list(keyword)
    if len(positional) == 1 and isinstance(positional[0], (list, tuple)):
        return list(positional[0])
    return list(positional)


def check_inplace(b, inplace):
    """The IR has no mutation. An in-place op computes the same values as its out-of-place form when nothing
    else reads the memory it writes: not its input, nor any tensor that input is a view of."""
    src = b.node.all_input_nodes[0]
    while inplace:
        if len([u for u in src.users if STATIC not in u.meta]) > 1:  # x.size(0) reads no data
            b.refuse("in-place op on a value that is read elsewhere (the IR has no mutation); use inplace=False")
        if src.op == "get_attr":
            b.refuse("in-place op on a parameter or buffer: it would change the model for later calls")
        if not src.meta.get(ALIAS):
            return
        src = src.all_input_nodes[0]


def legacy_reduction(size_average, reduce, reduction):
    """The `reduction` string, honouring the deprecated size_average/reduce flags as PyTorch does."""
    if size_average is not None or reduce is not None:
        return torch.nn._reduction.legacy_get_string(size_average, reduce)
    return reduction


def module_param(b, m, field):
    """A module's weight/bias as a param under its qualified name, or None when the module has none."""
    t = getattr(m, field)
    return None if t is None else b.param(f"{b.node.target}.{field}", t.dtype, t.shape)


def unary(b, op, x, attrs=None) -> Val:
    """The op on x cast to PyTorch's result dtype first (the sigmoid of an int tensor is a float)."""
    return b.emit(op, [b.cast(tensor(b, x), b.out_dtype)], attrs)


def probe(b, v):
    """A stand-in for torch.result_type: 0-d and dimensioned tensors and Python scalars promote differently."""
    if isinstance(v, Val):
        return torch.empty([0] * v.ndim, dtype=v.dtype)
    if isinstance(v, (bool, int, float)):
        return v
    b.refuse(f"operand must be a tensor or a number, got {type(v).__name__}")


def as_dtype(b, v, dtype) -> Val:
    return b.cast(v, dtype) if isinstance(v, Val) else b.const(v, dtype)


def binary(b, op, x, y) -> Val:
    """Both operands in PyTorch's promoted dtype; Python scalars become const nodes."""
    x, y = dense(b, x), dense(b, y)
    common = torch.result_type(probe(b, x), probe(b, y))
    if op == "div" and not common.is_floating_point:
        common = torch.float32  # true division
    return b.emit(op, [as_dtype(b, x, common), as_dtype(b, y, common)])


def half_storage(*operands) -> dict:
    """{"storage_dtype": "f16" or "bf16"} for a product or convolution of operands all in that half-precision dtype:
    PyTorch stores its result in 16 bits, and so may kforge (codegen/half_results.h); {} elsewhere (an f32 product,
    `.float()` operands included, is PyTorch's f32 arithmetic and stays so)."""
    dtypes = {v.dtype for v in operands}
    if len(dtypes) != 1 or next(iter(dtypes)) not in HALF:
        return {}
    return {"storage_dtype": TORCH_TO_IR[next(iter(dtypes))]}
