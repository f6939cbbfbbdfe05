"""Reductions: sum/mean/amax/amin/prod, torch.max/min in all three forms, argmax/argmin, logsumexp, norms, var/std."""
import math

import torch
import torch.nn.functional as F

from kforge.fx_ops.common import Multi, binary, norm_dim, norm_dims, on, tensor
from kforge.graph_builder import Val


def reduce_op(b, op, input, dim, keepdim) -> Val:
    x = tensor(b, input)
    return b.emit(op, [b.cast(x, b.out_dtype)], {"dims": norm_dims(dim, x.ndim), "keepdim": bool(keepdim)})


def arg_reduce(b, op, input, dim, keepdim) -> Val:
    x = tensor(b, input)
    if dim is not None:
        return b.emit(op, [x], {"dim": norm_dim(dim, x.ndim), "keepdim": bool(keepdim)})
    # dim=None: PyTorch takes the index into the flattened tensor.
    numel = math.prod(x.shape)
    flat = b.emit_tmp("reshape", [x], {"shape": [numel]}, x.dtype, (numel,))
    if not keepdim:
        return b.emit(op, [flat], {"dim": 0, "keepdim": False})
    index = b.emit_tmp(op, [flat], {"dim": 0, "keepdim": False}, torch.int64, ())
    return b.emit("reshape", [index], {"shape": list(b.out_shape)})


def reduction_handler(op):
    def handler(b, input, dim=None, keepdim=False, *, dtype=None):
        return reduce_op(b, op, input, dim, keepdim)
    return handler


for _op in ("sum", "mean", "amax", "amin", "prod"):
    on(getattr(torch, _op), _op)(reduction_handler(_op))


@on(torch.logsumexp, "logsumexp")
def logsumexp(b, input, dim, keepdim=False, *, out=None):
    """PyTorch's own formula: the max over the dims is subtracted before exp (no overflow), except where the max is
    infinite (then 0: PyTorch's masked_fill), and added back after the log. `m - m != 0` picks the infinite maxima
    without an infinite constant (the IR's JSON has none); a NaN max is replaced too, and gives NaN either way."""
    x = b.cast(tensor(b, input), b.out_dtype)
    dims = norm_dims(dim, x.ndim)
    kept = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    f32 = b.out_dtype
    m = b.emit_tmp("amax", [x], {"dims": dims, "keepdim": True}, f32, kept)
    infinite = b.emit_tmp("ne", [b.emit_tmp("sub", [m, m], {}, f32, kept), b.const(0.0, f32)], {}, torch.bool, kept)
    shift = b.emit_tmp("where", [infinite, b.const(0.0, f32), m], {}, f32, kept)
    e = b.emit_tmp("exp", [b.emit_tmp("sub", [x, shift], {}, f32, x.shape)], {}, f32, x.shape)
    s = b.emit_tmp("sum", [e], {"dims": dims, "keepdim": True}, f32, kept)
    if keepdim:
        return b.emit("add", [b.emit_tmp("log", [s], {}, f32, kept), shift])
    total = b.emit_tmp("add", [b.emit_tmp("log", [s], {}, f32, kept), shift], {}, f32, kept)
    return b.emit("reshape", [total], {"shape": list(b.out_shape)})


def max_min(op, arg_op, binary_op):
    """torch.max(x) reduces everything, torch.max(x, dim) gives (values, indices), torch.max(x, y) is maximum."""
    def handler(b, input, dim=None, keepdim=False):
        if isinstance(dim, Val):
            return binary(b, binary_op, input, dim)
        if dim is None:
            return reduce_op(b, op, input, None, False)
        return Multi(lambda: reduce_op(b, op, input, dim, keepdim), lambda: arg_reduce(b, arg_op, input, dim, keepdim),
                     fields=("values", "indices"))
    return handler


on(torch.max, "max")(max_min("amax", "argmax", "maximum"))
on(torch.min, "min")(max_min("amin", "argmin", "minimum"))
on(torch.argmax, "argmax")(lambda b, input, dim=None, keepdim=False: arg_reduce(b, "argmax", input, dim, keepdim))
on(torch.argmin, "argmin")(lambda b, input, dim=None, keepdim=False: arg_reduce(b, "argmin", input, dim, keepdim))


def vector_norm_attrs(b, x: Val, ord, dim, keepdim) -> dict:
    if ord not in (1, 2):
        b.refuse(f"norm of order {ord!r} is not supported (orders 1, 2 and 'fro')")
    return {"ord": int(ord), "dims": norm_dims(dim, x.ndim), "keepdim": bool(keepdim)}


@on(torch.linalg.vector_norm)
def vector_norm(b, x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    x = b.cast(tensor(b, x), b.out_dtype)
    return b.emit("vector_norm", [x], vector_norm_attrs(b, x, ord, dim, keepdim))


@on(torch.norm, "norm")
def norm(b, input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    return vector_norm(b, input, 2 if p == "fro" else p, dim, keepdim)  # Frobenius is the 2-norm over the dims


@on(torch.linalg.norm)
def linalg_norm(b, input, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    x = tensor(b, input)
    vector = isinstance(dim, int) or (dim is None and x.ndim == 1) or (dim is not None and len(dim) == 1)
    if ord is None or ord == "fro":
        ord = 2
    elif not vector:
        b.refuse(f"matrix norm of order {ord!r} is not supported")
    return vector_norm(b, x, ord, dim, keepdim)


@on(F.normalize)
def normalize(b, input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p over dim, eps), as F.normalize computes it."""
    x = tensor(b, input)
    attrs = vector_norm_attrs(b, x, p, dim, True)
    kept = tuple(1 if i in attrs["dims"] else s for i, s in enumerate(x.shape))
    n = b.emit_tmp("vector_norm", [x], attrs, x.dtype, kept)
    n = b.emit_tmp("clamp", [n], {"min": eps, "max": None}, x.dtype, kept)
    return b.emit("div", [x, n])


def var_attrs(x: Val, dim, unbiased, keepdim, correction) -> dict:
    if isinstance(dim, bool):  # torch.var(x, False): the old positional `unbiased`
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    return {"dims": norm_dims(dim, x.ndim), "keepdim": bool(keepdim), "correction": correction}


@on(torch.var, "var")
def var(b, input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    x = tensor(b, input)
    return b.emit("var", [x], var_attrs(x, dim, unbiased, keepdim, correction))


@on(torch.std, "std")
def std(b, input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    x = tensor(b, input)
    v = b.emit_tmp("var", [x], var_attrs(x, dim, unbiased, keepdim, correction), x.dtype, b.out_shape)
    return b.emit("sqrt", [v])
