"""PyTorch ops written as compositions of the IR's own (docs/interfaces.md, "Compositions"), the pointwise family:
gated and parametric activations (glu, logsigmoid, threshold, prelu, rrelu in eval, celu), softmin and the shrinks,
scaled logs and exponentials, frac, lerp, addcmul/addcdiv, logaddexp, remainders, hypot, logical ops, the NaN and
infinity tests, nan_to_num, heaviside, and statistics (var_mean, std_mean, any/all, count_nonzero)."""
import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import (Multi, as_dtype, check_inplace, module_param, norm_dim, norm_dims, on, on_module,
                                  tensor, unary)
from kforge.fx_ops.compositions import piece, reshape
from kforge.fx_ops.reductions import var_attrs
from kforge.graph_builder import Val


# Gated and parametric activations.
@on(F.glu)
def glu(b, input, dim=-1):
    x = tensor(b, input)
    d = norm_dim(dim, x.ndim)
    half = x.shape[d] // 2
    gate = piece(b, x, d, half, 2 * half)
    sig = b.emit_tmp("sigmoid", [gate], None, x.dtype, gate.shape)
    return b.emit("mul", [piece(b, x, d, 0, half), sig])


@on(F.logsigmoid)
def logsigmoid(b, input):
    """log(sigmoid(x)) = -softplus(-x), which stays finite where sigmoid underflows."""
    x = tensor(b, input)
    neg = b.emit_tmp("neg", [x], None, x.dtype, x.shape)
    sp = b.emit_tmp("softplus", [neg], {"beta": 1.0, "threshold": 20.0}, x.dtype, x.shape)
    return b.emit("neg", [sp])


@on(F.threshold)
def threshold(b, input, threshold, value, inplace=False):
    check_inplace(b, inplace)
    x = tensor(b, input)
    above = b.emit_tmp("gt", [x, b.const(threshold, x.dtype)], None, torch.bool, x.shape)
    return b.emit("where", [above, x, b.const(value, x.dtype)])


@on(F.prelu)
def prelu(b, input, weight):
    """max(0, x) + weight * min(0, x), the weight one value or one per channel (dim 1)."""
    x, w = tensor(b, input), tensor(b, weight)
    if w.ndim != 1 or (w.shape[0] != 1 and (x.ndim < 2 or w.shape[0] != x.shape[1])):
        b.refuse(f"prelu's weight {list(w.shape)} must hold one value or one per channel of {list(x.shape)}")
    wb = reshape(b, w, [w.shape[0]] + [1] * (x.ndim - 2)) if x.ndim >= 2 and w.shape[0] > 1 else w
    scaled = b.emit_tmp("mul", [x, wb], None, x.dtype, x.shape)
    positive = b.emit_tmp("ge", [x, b.const(0.0, x.dtype)], None, torch.bool, x.shape)
    return b.emit("where", [positive, x, scaled])


on_module(nn.PReLU)(lambda b, m, input: prelu(b, input, module_param(b, m, "weight")))


@on(F.rrelu)
def rrelu(b, input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if training:
        b.refuse("rrelu in training mode draws random slopes: kforge cannot verify it")
    check_inplace(b, inplace)
    return unary(b, "leaky_relu", input, {"negative_slope": (lower + upper) / 2})


on_module(nn.RReLU)(lambda b, m, input: rrelu(b, input, m.lower, m.upper, m.training, m.inplace))


@on(F.celu, torch.celu)
def celu(b, input, alpha=1.0, inplace=False):
    """alpha * elu(x / alpha): x where positive, alpha (exp(x / alpha) - 1) elsewhere."""
    check_inplace(b, inplace)
    x = tensor(b, input)
    if alpha == 1.0:
        return b.emit("elu", [x], {"alpha": 1.0})
    scaled = b.emit_tmp("mul", [x, b.const(1.0 / alpha, x.dtype)], None, x.dtype, x.shape)
    e = b.emit_tmp("elu", [scaled], {"alpha": 1.0}, x.dtype, x.shape)
    return b.emit("mul", [e, b.const(alpha, x.dtype)])


on_module(nn.CELU)(lambda b, m, input: celu(b, input, m.alpha, m.inplace))
on_module(nn.LogSigmoid)(lambda b, m, input: logsigmoid(b, input))
on_module(nn.GLU)(lambda b, m, input: glu(b, input, m.dim))
on_module(nn.Threshold)(lambda b, m, input: threshold(b, input, m.threshold, m.value, m.inplace))


@on(torch.var_mean)
def var_mean(b, input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    x = tensor(b, input)
    attrs = var_attrs(x, dim, unbiased, keepdim, correction)
    return Multi(lambda: b.emit("var", [x], attrs), lambda: b.emit("mean", [x], {k: attrs[k] for k in ("dims", "keepdim")}))


def any_all(kind):
    def handler(b, input, dim=None, keepdim=False):
        """Whether any (all) element is nonzero: the largest (smallest) of x != 0 as 0 or 1."""
        x = tensor(b, input)
        as_float = truth(b, x)
        dims = norm_dims(dim, x.ndim)
        shape = list(b.out_shape)
        extreme = b.emit_tmp("amax" if kind == "any" else "amin", [as_float], {"dims": dims, "keepdim": bool(keepdim)},
                             torch.float32, shape)
        return b.emit("ne", [extreme, b.const(0.0, torch.float32)])
    return handler


on(torch.any, "any")(any_all("any"))
on(torch.all, "all")(any_all("all"))


# Elementwise compositions.
def scaled(b, op: str, x: Val, factor: float) -> Val:
    """op(x * factor) as the FX node's value (log2, log10: the log scaled; exp2: exp of x ln 2)."""
    if op == "exp":
        return b.emit("exp", [b.emit_tmp("mul", [x, b.const(factor, x.dtype)], None, x.dtype, x.shape)])
    return b.emit("mul", [b.emit_tmp(op, [x], None, x.dtype, x.shape), b.const(factor, x.dtype)])


on(torch.log2, "log2")(lambda b, input: scaled(b, "log", b.cast(tensor(b, input), b.out_dtype), 1 / math.log(2)))
on(torch.log10, "log10")(lambda b, input: scaled(b, "log", b.cast(tensor(b, input), b.out_dtype), 1 / math.log(10)))
on(torch.exp2, torch.special.exp2, "exp2")(lambda b, input: scaled(b, "exp", b.cast(tensor(b, input), b.out_dtype), math.log(2)))


@on(torch.frac, "frac")
def frac(b, input):
    x = tensor(b, input)
    return b.emit("sub", [x, b.emit_tmp("trunc", [x], None, x.dtype, x.shape)])


@on(F.softmin)
def softmin(b, input, dim=None, _stacklevel=3, dtype=None):
    x = tensor(b, input)
    if dim is None:
        b.refuse("softmin without dim is not supported")
    return b.emit("softmax", [b.emit_tmp("neg", [x], None, x.dtype, x.shape)], {"dim": norm_dim(dim, x.ndim)})


def shrink(kind):
    def handler(b, input, lambd=0.5):
        """hardshrink: x where |x| > lambda, else 0; softshrink: x moved towards 0 by lambda, 0 within it."""
        x = tensor(b, input)
        t = lambda op, args: b.emit_tmp(op, args, None, x.dtype, x.shape)  # noqa: E731
        outside = b.emit_tmp("gt", [t("abs", [x]), b.const(lambd, x.dtype)], None, torch.bool, x.shape)
        if kind == "hard":
            return b.emit("where", [outside, x, b.const(0.0, x.dtype)])
        towards = t("sub", [x, t("mul", [t("sign", [x]), b.const(lambd, x.dtype)])])
        return b.emit("where", [outside, towards, b.const(0.0, x.dtype)])
    return handler


on(F.hardshrink, "hardshrink")(shrink("hard"))
on(F.softshrink)(shrink("soft"))
on_module(nn.Hardshrink)(lambda b, m, input: shrink("hard")(b, input, m.lambd))
on_module(nn.Softshrink)(lambda b, m, input: shrink("soft")(b, input, m.lambd))
@on(F.tanhshrink)
def tanhshrink(b, input):
    x = tensor(b, input)
    return b.emit("sub", [x, b.emit_tmp("tanh", [x], None, x.dtype, x.shape)])


on_module(nn.Tanhshrink)(lambda b, m, input: tanhshrink(b, input))
on_module(nn.Softmin)(lambda b, m, input: softmin(b, input, m.dim))


@on(torch.lerp, "lerp")
def lerp(b, input, end, weight):
    """start + weight (end - start)."""
    dt = b.out_dtype
    a, e = as_dtype(b, input, dt), as_dtype(b, end, dt)
    diff = b.emit_tmp("sub", [e, a], None, dt, torch.broadcast_shapes(a.shape, e.shape))
    step = b.emit_tmp("mul", [as_dtype(b, weight, dt), diff], None, dt, torch.broadcast_shapes(diff.shape, getattr(weight, "shape", ())))
    return b.emit("add", [a, step])


def addc(op):
    def handler(b, input, tensor1, tensor2, *, value=1):
        """input + value * (tensor1 op tensor2)."""
        dt = b.out_dtype
        t1, t2 = as_dtype(b, tensor1, dt), as_dtype(b, tensor2, dt)
        both = b.emit_tmp(op, [t1, t2], None, dt, torch.broadcast_shapes(t1.shape, t2.shape))
        if value != 1:
            both = b.emit_tmp("mul", [both, b.const(value, dt)], None, dt, both.shape)
        return b.emit("add", [as_dtype(b, input, dt), both])
    return handler


on(torch.addcmul, "addcmul")(addc("mul"))
on(torch.addcdiv, "addcdiv")(addc("div"))


@on(torch.logaddexp, "logaddexp")
def logaddexp(b, input, other):
    """max(a, b) + log1p(exp(-|a - b|)), finite where either exp would overflow."""
    dt = b.out_dtype
    a, c = as_dtype(b, input, dt), as_dtype(b, other, dt)
    shape = torch.broadcast_shapes(a.shape, c.shape)
    t = lambda op, args: b.emit_tmp(op, args, None, dt, shape)  # noqa: E731
    top = t("maximum", [a, c])
    rest = t("log1p", [t("exp", [t("neg", [t("abs", [t("sub", [a, c])])])])])
    return b.emit("add", [top, rest])


@on(torch.std_mean)
def std_mean(b, input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    x = tensor(b, input)
    attrs = var_attrs(x, dim, unbiased, keepdim, correction)

    def std():
        v = b.emit_tmp("var", [x], attrs, x.dtype, b.out_shape)
        return b.emit("sqrt", [v])
    return Multi(std, lambda: b.emit("mean", [x], {k: attrs[k] for k in ("dims", "keepdim")}))


@on(torch.count_nonzero, "count_nonzero")
def count_nonzero(b, input, dim=None):
    x = tensor(b, input)
    if math.prod(x.shape) >= 1 << 24:
        b.refuse("count_nonzero over 2^24 elements or more (counted in float32)")
    # Counted in float32 (exact below 2^24 a row: kforge's reductions accumulate floats), then PyTorch's int64.
    count = b.emit_tmp("sum", [truth(b, x)], {"dims": norm_dims(dim, x.ndim), "keepdim": False},
                       torch.float32, b.out_shape)
    return b.emit("cast", [count], {"dtype": b.ir_dtype(b.out_dtype)})


# Remainders, angles and logic.
def float_binary(b, op: str, input, other) -> Val:
    dt = b.out_dtype
    if not dt.is_floating_point:
        b.refuse(f"{op} of integer tensors is not supported")
    return as_dtype(b, input, dt), as_dtype(b, other, dt), dt


@on(torch.fmod, "fmod")
def fmod(b, input, other):
    a, c, _ = float_binary(b, "fmod", input, other)
    return b.emit("fmod", [a, c])


@on(torch.remainder, operator.mod, "remainder")
def remainder(b, input, other):
    """Python's modulo: fmod, moved by the divisor where it is nonzero and its sign differs from the divisor's."""
    a, c, dt = float_binary(b, "remainder", input, other)
    shape = b.out_shape
    mod = b.emit_tmp("fmod", [a, c], None, dt, shape)
    zero = b.const(0.0, dt)
    flag = lambda op, x, y: b.emit_tmp(op, [x, y], None, torch.bool, torch.broadcast_shapes(x.shape, y.shape))  # noqa: E731
    moved = b.emit_tmp("add", [mod, c], None, dt, shape)
    differ = flag("ne", flag("lt", c, zero), flag("lt", mod, zero))
    return b.emit("where", [flag("ne", mod, zero), b.emit_tmp("where", [differ, moved, mod], None, dt, shape), mod])


@on(torch.floor_divide, operator.floordiv, "floor_divide")
def floor_divide(b, input, other):
    """Python's floor division as PyTorch computes it for floats (div_floor_floating): (a - fmod(a, b)) / b, one less
    where the remainder's sign differs from the divisor's, then floored and rounded up where more than half a unit
    below; a zero quotient keeps the sign of a / b; division by zero is a / b itself."""
    a, c, dt = float_binary(b, "floor_divide", input, other)
    shape = b.out_shape
    zero, one = b.const(0.0, dt), b.const(1.0, dt)
    tmp = lambda op, *args: b.emit_tmp(op, list(args), None, dt, shape)  # noqa: E731
    flag = lambda op, x, y: b.emit_tmp(op, [x, y], None, torch.bool, torch.broadcast_shapes(x.shape, y.shape))  # noqa: E731
    pick = lambda cond, x, y: b.emit_tmp("where", [cond, x, y], None, dt, shape)  # noqa: E731
    mod = tmp("fmod", a, c)
    div = tmp("div", tmp("sub", a, mod), c)
    differ = flag("ne", flag("lt", c, zero), flag("lt", mod, zero))
    div = pick(flag("ne", mod, zero), pick(differ, tmp("sub", div, one), div), div)
    floored = b.emit_tmp("floor", [div], None, dt, shape)
    floored = pick(flag("gt", tmp("sub", div, floored), b.const(0.5, dt)), tmp("add", floored, one), floored)
    quotient = tmp("div", a, c)
    signed_zero = tmp("mul", quotient, zero)
    result = pick(flag("ne", div, zero), floored, signed_zero)
    return b.emit("where", [flag("eq", c, zero), quotient, result])


@on(torch.atan2, torch.arctan2, "atan2", "arctan2")
def atan2(b, input, other):
    a, c, _ = float_binary(b, "atan2", input, other)
    return b.emit("atan2", [a, c])


@on(torch.hypot, "hypot")
def hypot(b, input, other):
    a, c, dt = float_binary(b, "hypot", input, other)
    shape = b.out_shape
    sq = lambda v: b.emit_tmp("mul", [v, v], None, dt, v.shape)  # noqa: E731
    return b.emit("sqrt", [b.emit_tmp("add", [sq(a), sq(c)], None, dt, shape)])


def truth(b, v) -> Val:
    """A tensor as 1.0 where nonzero (true), else 0.0."""
    x = tensor(b, v)
    nonzero = x if x.dtype == torch.bool else b.emit_tmp("ne", [x, b.const(0, x.dtype)], None, torch.bool, x.shape)
    return b.cast(nonzero, torch.float32)


def logical(op):
    def handler(b, input, other=None):
        zero = b.const(0.0, torch.float32)
        if op == "not":
            return b.emit("eq", [truth(b, input), zero])
        a, c = truth(b, input), truth(b, other)
        if op == "xor":
            return b.emit("ne", [a, c])
        both = b.emit_tmp("mul" if op == "and" else "maximum", [a, c], None, torch.float32, b.out_shape)
        return b.emit("ne", [both, zero])
    return handler


for _op in ("and", "or", "xor", "not"):
    on(getattr(torch, f"logical_{_op}"), f"logical_{_op}")(logical(_op))


@on(torch.isnan, "isnan")
def isnan(b, input):
    x = tensor(b, input)
    return b.emit("ne", [x, x])


@on(torch.isinf, "isinf")
def isinf(b, input):
    x = tensor(b, input)
    return b.emit("eq", [b.emit_tmp("abs", [x], None, x.dtype, x.shape), b.const(float("inf"), x.dtype)])


@on(torch.isfinite, "isfinite")
def isfinite(b, input):
    """x - x is 0 exactly where x is finite (NaN for infinities and NaN)."""
    x = tensor(b, input)
    return b.emit("eq", [b.emit_tmp("sub", [x, x], None, x.dtype, x.shape), b.const(0.0, x.dtype)])


@on(torch.nan_to_num, "nan_to_num")
def nan_to_num(b, input, nan=0.0, posinf=None, neginf=None):
    x = tensor(b, input)
    if x.dtype != torch.float32:
        b.refuse("nan_to_num of a tensor other than float32 is not supported")
    big = torch.finfo(torch.float32).max
    t = lambda op, args, dt=x.dtype: b.emit_tmp(op, args, None, dt, x.shape)  # noqa: E731
    c = lambda v: b.const(v, x.dtype)  # noqa: E731
    v = t("where", [t("eq", [x, c(float("inf"))], torch.bool), c(big if posinf is None else posinf), x])
    v = t("where", [t("eq", [x, c(float("-inf"))], torch.bool), c(-big if neginf is None else neginf), v])
    return b.emit("where", [t("ne", [x, x], torch.bool), c(nan), v])


@on(torch.heaviside, "heaviside")
def heaviside(b, input, values):
    x = tensor(b, input)
    dt = b.out_dtype
    step = b.emit_tmp("where", [b.emit_tmp("gt", [x, b.const(0, x.dtype)], None, torch.bool, x.shape), b.const(1.0, dt),
                                b.const(0.0, dt)], None, dt, x.shape)
    at_zero = b.emit_tmp("eq", [x, b.const(0, x.dtype)], None, torch.bool, x.shape)
    return b.emit("where", [at_zero, as_dtype(b, values, dt), step])
