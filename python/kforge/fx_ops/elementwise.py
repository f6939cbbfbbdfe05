"""Elementwise ops: activations, clamp, pow, casts, dropout (as identity), binaries, where."""
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import as_dtype, binary, check_inplace, filled, on, on_module, probe, tensor, unary
from kforge.graph_builder import Val


def simple_unary(op):
    def handler(b, input, inplace=False):
        check_inplace(b, inplace)
        return unary(b, op, input)
    return handler


for _op, _targets in {
    "relu": (torch.relu, F.relu, "relu"), "sigmoid": (torch.sigmoid, F.sigmoid, "sigmoid"),
    "tanh": (torch.tanh, F.tanh, "tanh"), "exp": (torch.exp, "exp"), "log": (torch.log, "log"),
    "abs": (torch.abs, torch.absolute, operator.abs, "abs", "absolute"),
    "neg": (torch.neg, torch.negative, operator.neg, "neg", "negative"),
    "sqrt": (torch.sqrt, "sqrt"), "rsqrt": (torch.rsqrt, "rsqrt"), "erf": (torch.erf, torch.special.erf, "erf"),
    "sin": (torch.sin, "sin"), "cos": (torch.cos, "cos"), "reciprocal": (torch.reciprocal, "reciprocal"),
    "sign": (torch.sign, "sign"), "silu": (F.silu,), "softsign": (F.softsign,), "selu": (F.selu, torch.selu),
    "hardsigmoid": (F.hardsigmoid,), "hardswish": (F.hardswish,), "mish": (F.mish,),
    "floor": (torch.floor, "floor"), "ceil": (torch.ceil, "ceil"), "round": (torch.round, "round"),
    "trunc": (torch.trunc, torch.fix, "trunc", "fix"), "log1p": (torch.log1p, torch.special.log1p, "log1p"),
    "expm1": (torch.expm1, torch.special.expm1, "expm1"), "tan": (torch.tan, "tan"),
    "atan": (torch.atan, torch.arctan, "atan", "arctan"), "asin": (torch.asin, torch.arcsin, "asin", "arcsin"),
    "acos": (torch.acos, torch.arccos, "acos", "arccos"), "sinh": (torch.sinh, "sinh"), "cosh": (torch.cosh, "cosh"),
}.items():
    on(*_targets)(simple_unary(_op))

for _op, _cls in {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "silu": nn.SiLU,
                  "softsign": nn.Softsign, "selu": nn.SELU, "hardsigmoid": nn.Hardsigmoid,
                  "hardswish": nn.Hardswish, "mish": nn.Mish}.items():
    on_module(_cls)(lambda b, m, input, _op=_op: simple_unary(_op)(b, input, getattr(m, "inplace", False)))


@on(F.gelu)
def gelu(b, input, approximate="none"):
    return unary(b, "gelu", input, {"approximate": approximate})


@on(F.leaky_relu)
def leaky_relu(b, input, negative_slope=0.01, inplace=False):
    check_inplace(b, inplace)
    return unary(b, "leaky_relu", input, {"negative_slope": negative_slope})


@on(F.elu)
def elu(b, input, alpha=1.0, inplace=False):
    check_inplace(b, inplace)
    return unary(b, "elu", input, {"alpha": alpha})


@on(F.hardtanh)
def hardtanh(b, input, min_val=-1.0, max_val=1.0, inplace=False):
    check_inplace(b, inplace)
    return unary(b, "hardtanh", input, {"min_val": min_val, "max_val": max_val})


@on(F.relu6)
def relu6(b, input, inplace=False):
    return hardtanh(b, input, 0.0, 6.0, inplace)


@on(F.softplus)
def softplus(b, input, beta=1.0, threshold=20.0):
    return unary(b, "softplus", input, {"beta": beta, "threshold": threshold})


on_module(nn.GELU)(lambda b, m, input: gelu(b, input, m.approximate))
on_module(nn.LeakyReLU)(lambda b, m, input: leaky_relu(b, input, m.negative_slope, m.inplace))
on_module(nn.ELU)(lambda b, m, input: elu(b, input, m.alpha, m.inplace))
on_module(nn.Hardtanh, nn.ReLU6)(lambda b, m, input: hardtanh(b, input, m.min_val, m.max_val, m.inplace))
on_module(nn.Softplus)(lambda b, m, input: softplus(b, input, m.beta, m.threshold))


@on(torch.clamp, torch.clip, "clamp", "clip")
def clamp(b, input, min=None, max=None):
    if isinstance(min, Val) or isinstance(max, Val):
        return clamp_by_tensors(b, input, min, max)
    return unary(b, "clamp", input, {"min": min, "max": max})


def clamp_by_tensors(b, input, lo, hi):
    """torch.clamp with tensor bounds: the maximum with lo, then the minimum with hi (hi wins where lo > hi, as in
    PyTorch)."""
    dt, shape = b.out_dtype, b.out_shape
    v = as_dtype(b, input, dt)
    if lo is not None:
        step = [v, as_dtype(b, lo, dt)]
        v = b.emit("maximum", step) if hi is None else b.emit_tmp("maximum", step, None, dt, shape)
    if hi is not None:
        v = b.emit("minimum", [v, as_dtype(b, hi, dt)])
    return v


on(torch.clamp_min, "clamp_min")(lambda b, input, min: clamp(b, input, min=min))
on(torch.clamp_max, "clamp_max")(lambda b, input, max: clamp(b, input, max=max))


@on(operator.pow, torch.pow, "pow")
def pow_(b, input, exponent):
    if isinstance(input, Val) and isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        return unary(b, "pow_scalar", input, {"exponent": exponent})
    return binary(b, "pow", input, exponent)  # tensor exponent, or a scalar base as in 2 ** x


on(torch.square, "square")(lambda b, input: unary(b, "pow_scalar", input, {"exponent": 2}))


@on("to", "type", "float", "long", "bool", "cuda", "cpu")
def to(b, input, *args, **kwargs):
    """Device moves are no-ops in the IR; only the dtype PyTorch ended with matters."""
    x = tensor(b, input)
    return x if x.dtype == b.out_dtype else b.emit("cast", [x], {"dtype": b.ir_dtype(b.out_dtype)})


on("detach", "clone", torch.clone)(lambda b, input, *args, **kwargs: tensor(b, input))


# Tensors made in forward from static sizes (an RNN's initial state): their values are known, their shape FX's.
@on(torch.zeros, torch.ones)
def zeros_or_ones(b, *size, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    return filled(b, 1 if b.node.target is torch.ones else 0)


@on(torch.full)
def full(b, size, fill_value, *, dtype=None, device=None, layout=None, requires_grad=False, pin_memory=False, out=None):
    if not isinstance(fill_value, (int, float, bool)):
        b.refuse("torch.full's value must be a Python number")
    return filled(b, fill_value)


on_module(nn.Identity)(lambda b, m, input, *args, **kwargs: tensor(b, input))


@on(F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout)
def dropout(b, input, p=0.5, training=True, inplace=False):
    if training and p > 0:
        b.refuse("dropout is random: kforge cannot verify it yet")
    return tensor(b, input)


on_module(nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)(
    lambda b, m, input: dropout(b, input, m.p, m.training))


def binary_handler(op):
    def handler(b, input, other, alpha=1, rounding_mode=None):
        if rounding_mode is not None:
            b.refuse(f"division with rounding_mode={rounding_mode!r} is not supported")
        if alpha != 1:  # torch.add(x, y, alpha=a) is x + a * y
            other = other * alpha if not isinstance(other, Val) else binary_tmp(b, "mul", other, alpha)
        return binary(b, op, input, other)
    return handler


def binary_tmp(b, op, x: Val, scalar) -> Val:
    dtype = torch.result_type(probe(b, x), scalar)
    return b.emit_tmp(op, [b.cast(x, dtype), b.const(scalar, dtype)], None, dtype, x.shape)


for _op, _targets in {
    "add": (operator.add, torch.add, "add"), "sub": (operator.sub, torch.sub, torch.subtract, "sub", "subtract"),
    "mul": (operator.mul, torch.mul, torch.multiply, "mul", "multiply"),
    "div": (operator.truediv, torch.div, torch.divide, torch.true_divide, "div", "divide", "true_divide"),
    "maximum": (torch.maximum, "maximum"), "minimum": (torch.minimum, "minimum"),
    "gt": (operator.gt, torch.gt, torch.greater, "gt", "greater"),
    "lt": (operator.lt, torch.lt, torch.less, "lt", "less"),
    "ge": (operator.ge, torch.ge, torch.greater_equal, "ge", "greater_equal"),
    "le": (operator.le, torch.le, torch.less_equal, "le", "less_equal"),
    "eq": (operator.eq, torch.eq, "eq"), "ne": (operator.ne, torch.ne, torch.not_equal, "ne", "not_equal"),
}.items():
    on(*_targets)(binary_handler(_op))


@on(torch.where)
def where(b, condition, input, other):
    common = torch.result_type(probe(b, input), probe(b, other))
    cond = b.cast(tensor(b, condition, "condition"), torch.bool)
    return b.emit("where", [cond, as_dtype(b, input, common), as_dtype(b, other, common)])


on("where")(lambda b, input, condition, other: where(b, condition, input, other))


@on(torch.masked_fill, "masked_fill")
def masked_fill(b, input, mask, value):
    """x where the mask is false, the value where it is true (the value cast to x's dtype, as PyTorch keeps it)."""
    x = tensor(b, input)
    cond = b.cast(tensor(b, mask, "mask"), torch.bool)
    return b.emit("where", [cond, as_dtype(b, value, x.dtype), x])


def triangle(upper):
    def handler(b, input, diagonal=0):
        x = tensor(b, input)
        if x.ndim < 2:
            b.refuse(f"{'triu' if upper else 'tril'} needs at least 2 dims, got {x.ndim}")
        if not isinstance(diagonal, int):
            b.refuse(f"the diagonal of {'triu' if upper else 'tril'} must be a Python int, got {type(diagonal).__name__}")
        return b.emit("triangle", [x], {"upper": upper, "diagonal": diagonal})
    return handler


on(torch.triu, "triu")(triangle(True))
on(torch.tril, "tril")(triangle(False))
