"""PyTorch ops written as compositions of the IR's own (docs/interfaces.md, "Compositions"): tensors like another,
one position of a dim (select), repetition (repeat, tile), roll, padding (constant, reflect, replicate, circular),
nearest-neighbour resizing by whole factors, pixel (un)shuffle, outer products, gated and parametric activations
(glu, logsigmoid, threshold, prelu, rrelu in eval, celu), var_mean, any/all, and lookups (index_select, embedding)
as gathers. Each is the same function as PyTorch's; forms that are not (bilinear resizing, a random rrelu, an
embedding that renormalizes its table) are refused by name."""
import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import (Multi, check_inplace, filled, module_param, norm_dim, norm_dims, on, on_module, tensor,
                                  unary, varargs)
from kforge.graph_builder import Val


def reshape(b, x: Val, shape) -> Val:
    return x if tuple(shape) == tuple(x.shape) else b.emit_tmp("reshape", [x], {"shape": list(shape)}, x.dtype, shape)


def final(b, v: Val) -> Val:
    """`v` as the FX node's own value: a last reshape to PyTorch's shape (a no-op view where it already has it),
    unless a step already emitted it as that value (slice_of does where its shape is the node's)."""
    return v if v.name == b.node.name else b.emit("reshape", [v], {"shape": list(b.out_shape)})


def expand(b, x: Val, shape) -> Val:
    return x if tuple(shape) == tuple(x.shape) else b.emit_tmp("expand", [x], {"shape": list(shape)}, x.dtype, shape)


def piece(b, x: Val, d: int, start: int, end: int, step: int = 1) -> Val:
    """x[.., start:end:step, ..] along d as an intermediate value (shapes.slice_of's node may be the FX node's own)."""
    if start == 0 and end == x.shape[d] and step == 1:
        return x
    shape = list(x.shape)
    shape[d] = (end - start + step - 1) // step
    return b.emit_tmp("slice", [x], {"dim": d, "start": start, "end": end, "step": step}, x.dtype, shape)


def cat(b, parts: list[Val], d: int) -> Val:
    if len(parts) == 1:
        return parts[0]
    shape = list(parts[0].shape)
    shape[d] = sum(p.shape[d] for p in parts)
    return b.emit_tmp("cat", parts, {"dim": d}, parts[0].dtype, shape)


# Tensors like another, of one value.
@on(torch.ones_like, torch.zeros_like, torch.full_like)
def like(b, input, fill_value=None, *, dtype=None, layout=None, device=None, requires_grad=False,
         memory_format=None, pin_memory=False):
    target = b.node.target
    value = 1 if target is torch.ones_like else 0 if target is torch.zeros_like else fill_value
    if not isinstance(value, (int, float, bool)):
        b.refuse("torch.full_like's value must be a Python number")
    return filled(b, value)


on("new_ones", "new_zeros")(lambda b, input, *size, **kwargs: filled(b, 1 if b.node.target == "new_ones" else 0))


@on(torch.select, "select")
def select(b, input, dim, index):
    x = tensor(b, input)
    d = norm_dim(dim, x.ndim)
    i = index + x.shape[d] if index < 0 else index
    return final(b, piece(b, x, d, i, i + 1))


def repeated(b, x: Val, repeats: list[int]) -> Val:
    """x.repeat(*repeats): x given leading dims of 1 up to len(repeats), each dim d then r_d copies of itself one
    after another (an expand of x with a dim of r_d before each of its dims, flattened)."""
    if len(repeats) < x.ndim:
        b.refuse(f"repeat needs a count for each of the tensor's {x.ndim} dims")
    shape = [1] * (len(repeats) - x.ndim) + list(x.shape)
    interleaved = [v for s in shape for v in (1, s)]
    grown = [v for r, s in zip(repeats, shape) for v in (r, s)]
    return final(b, expand(b, reshape(b, x, interleaved), grown))


@on("repeat")
def repeat(b, input, *sizes):
    return repeated(b, tensor(b, input), varargs(sizes, None))


@on(torch.tile, "tile")
def tile(b, input, dims):
    x = tensor(b, input)
    dims = list(dims)
    return repeated(b, x, [1] * (x.ndim - len(dims)) + dims)


@on(torch.roll, "roll")
def roll(b, input, shifts, dims=None):
    """Each dim's roll as its last `s` elements before the others."""
    x = tensor(b, input)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    if dims is None:
        flat = reshape(b, x, [math.prod(x.shape)])
        return final(b, rolled(b, flat, 0, shifts[0]))
    dims = [dims] if isinstance(dims, int) else list(dims)
    v = x
    for shift, dim in zip(shifts, dims):
        v = rolled(b, v, norm_dim(dim, x.ndim), shift)
    return final(b, v)


def rolled(b, v: Val, d: int, shift: int) -> Val:
    n = v.shape[d]
    s = shift % n
    return v if s == 0 else cat(b, [piece(b, v, d, n - s, n), piece(b, v, d, 0, n - s)], d)


# Padding: torch's pairs run from the last dim backwards.
@on(F.pad)
def pad(b, input, pad, mode="constant", value=None):
    x = tensor(b, input)
    pairs = list(pad)
    if len(pairs) % 2 or len(pairs) // 2 > x.ndim:
        b.refuse(f"padding {pairs} does not pair up with the tensor's {x.ndim} dims")
    v = x
    for k in range(len(pairs) // 2):
        d, left, right = x.ndim - 1 - k, pairs[2 * k], pairs[2 * k + 1]
        v = padded(b, v, d, left, right, mode, 0.0 if value is None else value)
    return final(b, v)


def padded(b, v: Val, d: int, left: int, right: int, mode: str, value) -> Val:
    n = v.shape[d]
    if left < 0 or right < 0:  # negative padding crops
        v = piece(b, v, d, max(-left, 0), n - max(-right, 0))
        left, right, n = max(left, 0), max(right, 0), v.shape[d]
    if mode in ("reflect", "circular") and (left > n - (mode == "reflect") or right > n - (mode == "reflect")):
        b.refuse(f"{mode} padding of {max(left, right)} on a dim of {n}")

    def side(count, at_start):
        if count == 0:
            return None
        shape = list(v.shape)
        shape[d] = count
        if mode == "constant":
            return expand(b, b.const(value, v.dtype), shape)
        if mode == "replicate":
            return expand(b, piece(b, v, d, 0, 1) if at_start else piece(b, v, d, n - 1, n), shape)
        if mode == "reflect":
            part = piece(b, v, d, 1, count + 1) if at_start else piece(b, v, d, n - 1 - count, n - 1)
            return b.emit_tmp("flip", [part], {"dims": [d]}, v.dtype, shape)
        if mode == "circular":
            return piece(b, v, d, n - count, n) if at_start else piece(b, v, d, 0, count)
        b.refuse(f"padding mode {mode!r} is not supported")
    parts = [p for p in (side(left, True), v, side(right, False)) if p is not None]
    return cat(b, parts, d)


for _cls, _mode in ((nn.ConstantPad1d, "constant"), (nn.ConstantPad2d, "constant"), (nn.ConstantPad3d, "constant"),
                    (nn.ZeroPad1d, "constant"), (nn.ZeroPad2d, "constant"), (nn.ZeroPad3d, "constant"),
                    (nn.ReflectionPad1d, "reflect"), (nn.ReflectionPad2d, "reflect"), (nn.ReflectionPad3d, "reflect"),
                    (nn.ReplicationPad1d, "replicate"), (nn.ReplicationPad2d, "replicate"),
                    (nn.ReplicationPad3d, "replicate"), (nn.CircularPad1d, "circular"), (nn.CircularPad2d, "circular"),
                    (nn.CircularPad3d, "circular")):
    on_module(_cls)(lambda b, m, input, _mode=_mode: pad(b, input, m.padding, _mode, getattr(m, "value", 0.0)))


# Resizing by whole factors: nearest up by f, each element f times (an expand), down by k, every k-th element (a
# strided slice; nearest-exact takes the middle one of each k); (bi/tri)linear up by f without align_corners.
@on(F.interpolate, F.upsample, F.upsample_nearest, F.upsample_bilinear)
def interpolate(b, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    x = tensor(b, input)
    if b.node.target is F.upsample_bilinear:  # the deprecated function's fixed mode
        mode, align_corners = "bilinear", True
    linear = mode in ("linear", "bilinear", "trilinear")
    if mode not in ("nearest", "nearest-exact") and not linear:
        b.refuse(f"interpolate with mode={mode!r} is not supported (nearest, nearest-exact and (bi/tri)linear are)")
    if linear and (align_corners or antialias):
        b.refuse(f"{mode} resizing with align_corners=True or antialias is not supported")
    v = x
    for s, (n, m) in enumerate(zip(x.shape[2:], b.out_shape[2:])):
        d = 2 + s
        if m == n:
            continue
        if m % n == 0:
            v = linear_up(b, v, d, m // n) if linear else nearest_up(b, v, d, m // n)
        elif n % m == 0 and not linear:
            k = n // m
            start = k // 2 if mode == "nearest-exact" else 0
            v = piece(b, v, d, start, start + k * (m - 1) + 1, k)
        else:
            b.refuse(f"{mode} resizing of a dim of {n} to {m} (only by whole factors{'' if linear else ' either way'})")
    return final(b, v)


def interleaved(b, parts: list[Val], d: int) -> Val:
    """parts[r][.., i, ..] at position i * len(parts) + r of dim d: a stack after d, flattened into it."""
    shape = list(parts[0].shape)
    grown = shape[:d + 1] + [1] + shape[d + 1:]
    stacked = cat(b, [reshape(b, p, grown) for p in parts], d + 1)
    return reshape(b, stacked, shape[:d] + [shape[d] * len(parts)] + shape[d + 1:])


def nearest_up(b, v: Val, d: int, f: int) -> Val:
    """Each element f times along d (an expand of a new dim after it, flattened)."""
    shape = list(v.shape)
    v = reshape(b, v, shape[:d + 1] + [1] + shape[d + 1:])
    v = expand(b, v, shape[:d + 1] + [f] + shape[d + 1:])
    return reshape(b, v, shape[:d] + [shape[d] * f] + shape[d + 1:])


def linear_up(b, v: Val, d: int, f: int) -> Val:
    """Linear resizing by f along d with align_corners=False, one dim at a time (PyTorch's bilinear and trilinear
    weights are these products): output f i + r reads source position i + t, t = (2r + 1 - f) / 2f, so it is
    in[i] and its neighbour on t's side (the edge element repeated past the ends, where PyTorch clamps the
    position), weighted 1 - |t| and |t|."""
    n = v.shape[d]
    before = cat(b, [piece(b, v, d, 0, 1), piece(b, v, d, 0, n - 1)], d) if n > 1 else v
    after = cat(b, [piece(b, v, d, 1, n), piece(b, v, d, n - 1, n)], d) if n > 1 else v
    parts = []
    for r in range(f):
        t = (2 * r + 1 - f) / (2 * f)
        if t == 0:
            parts.append(v)
            continue
        near = b.emit_tmp("mul", [v, b.const(1 - abs(t), v.dtype)], None, v.dtype, v.shape)
        side = b.emit_tmp("mul", [after if t > 0 else before, b.const(abs(t), v.dtype)], None, v.dtype, v.shape)
        parts.append(b.emit_tmp("add", [near, side], None, v.dtype, v.shape))
    return interleaved(b, parts, d)


on_module(nn.Upsample, nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d)(
    lambda b, m, input: interpolate(b, input, m.size, m.scale_factor, getattr(m, "mode", "nearest"),
                                    getattr(m, "align_corners", None)))


def image(b, x: Val, what: str):
    if x.ndim != 4:
        b.refuse(f"{what} needs [N, C, H, W], got {list(x.shape)}")
    return x.shape


@on(F.pixel_shuffle)
def pixel_shuffle(b, input, upscale_factor):
    x = tensor(b, input)
    (n, c, h, w), r = image(b, x, "pixel_shuffle"), upscale_factor
    v = reshape(b, x, [n, c // (r * r), r, r, h, w])
    v = b.emit_tmp("permute", [v], {"dims": [0, 1, 4, 2, 5, 3]}, x.dtype, [n, c // (r * r), h, r, w, r])
    return final(b, v)


@on(F.pixel_unshuffle)
def pixel_unshuffle(b, input, downscale_factor):
    x = tensor(b, input)
    (n, c, h, w), r = image(b, x, "pixel_unshuffle"), downscale_factor
    v = reshape(b, x, [n, c, h // r, r, w // r, r])
    v = b.emit_tmp("permute", [v], {"dims": [0, 1, 3, 5, 2, 4]}, x.dtype, [n, c, r, r, h // r, w // r])
    return final(b, v)


on_module(nn.PixelShuffle)(lambda b, m, input: pixel_shuffle(b, input, m.upscale_factor))
on_module(nn.PixelUnshuffle)(lambda b, m, input: pixel_unshuffle(b, input, m.downscale_factor))


@on(torch.outer, torch.ger, "outer", "ger")
def outer(b, input, vec2):
    a, v = tensor(b, input), tensor(b, vec2)
    return b.emit("mul", [b.cast(reshape(b, a, [a.shape[0], 1]), b.out_dtype), b.cast(reshape(b, v, [1, v.shape[0]]), b.out_dtype)])


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
    from kforge.fx_ops.reductions import var_attrs
    x = tensor(b, input)
    attrs = var_attrs(x, dim, unbiased, keepdim, correction)
    return Multi(lambda: b.emit("var", [x], attrs), lambda: b.emit("mean", [x], {k: attrs[k] for k in ("dims", "keepdim")}))


def any_all(kind):
    def handler(b, input, dim=None, keepdim=False):
        """Whether any (all) element is nonzero: the largest (smallest) of x != 0 as 0 or 1."""
        x = tensor(b, input)
        nonzero = x if x.dtype == torch.bool else b.emit_tmp("ne", [x, b.const(0, x.dtype)], None, torch.bool, x.shape)
        as_float = b.cast(nonzero, torch.float32)
        dims = norm_dims(dim, x.ndim)
        shape = list(b.out_shape)
        extreme = b.emit_tmp("amax" if kind == "any" else "amin", [as_float], {"dims": dims, "keepdim": bool(keepdim)},
                             torch.float32, shape)
        return b.emit("ne", [extreme, b.const(0.0, torch.float32)])
    return handler


on(torch.any, "any")(any_all("any"))
on(torch.all, "all")(any_all("all"))


# Lookups as gathers (torch.gather's semantics: the index has the result's shape).
@on(torch.index_select, "index_select")
def index_select(b, input, dim, index):
    x, idx = tensor(b, input), tensor(b, index, "index")
    d = norm_dim(dim, x.ndim)
    shape = list(x.shape)
    shape[d] = idx.shape[0] if idx.ndim else 1
    line = [1] * x.ndim
    line[d] = shape[d]
    return b.emit("gather", [x, expand(b, reshape(b, b.cast(idx, torch.int64), line), shape)], {"dim": d})


@on(F.embedding)
def embedding(b, input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        b.refuse("embedding with max_norm renormalizes its table in place: not supported")
    idx, table = tensor(b, input, "indices"), tensor(b, weight, "weight")
    count, width = math.prod(idx.shape), table.shape[1]
    flat = expand(b, reshape(b, b.cast(idx, torch.int64), [count, 1]), [count, width])
    picked = b.emit_tmp("gather", [table, flat], {"dim": 0}, table.dtype, [count, width])
    return final(b, picked)


on_module(nn.Embedding)(lambda b, m, input: embedding(b, input, module_param(b, m, "weight"), m.padding_idx, m.max_norm))


def progression(b, n: int, start: float, step: float, dtype) -> Val:
    """start + k step for k < n: the running sum of n ones, less one (exact in float32 up to 2^24 elements), scaled
    and shifted, then cast to `dtype`."""
    if n > 1 << 24:
        b.refuse(f"an arange of {n} elements (at most 2^24: float32 counts exactly up to there)")
    f32 = torch.float32
    ones = expand(b, b.const(1.0, f32), [n])
    count = b.emit_tmp("cumsum", [ones], {"dim": 0, "reverse": False}, f32, [n])
    v = b.emit_tmp("sub", [count, b.const(1.0, f32)], None, f32, [n])
    v = v if step == 1 else b.emit_tmp("mul", [v, b.const(float(step), f32)], None, f32, [n])
    v = v if start == 0 else b.emit_tmp("add", [v, b.const(float(start), f32)], None, f32, [n])
    return b.cast(v, dtype)


@on(torch.arange)
def arange(b, start, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
           out=None):
    if any(isinstance(v, Val) for v in (start, end, step)):
        b.refuse("torch.arange with tensor bounds is not supported")
    if end is None:
        start, end = 0, start
    return final(b, progression(b, b.out_shape[0], start, step, b.out_dtype))



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


def operand(b, v, dtype, shape=None) -> Val:
    return b.cast(v, dtype) if isinstance(v, Val) else b.const(v, dtype)


@on(torch.lerp, "lerp")
def lerp(b, input, end, weight):
    """start + weight (end - start)."""
    dt = b.out_dtype
    a, e = operand(b, input, dt), operand(b, end, dt)
    diff = b.emit_tmp("sub", [e, a], None, dt, torch.broadcast_shapes(a.shape, e.shape))
    step = b.emit_tmp("mul", [operand(b, weight, dt), diff], None, dt, torch.broadcast_shapes(diff.shape, getattr(weight, "shape", ())))
    return b.emit("add", [a, step])


def addc(op):
    def handler(b, input, tensor1, tensor2, *, value=1):
        """input + value * (tensor1 op tensor2)."""
        dt = b.out_dtype
        t1, t2 = operand(b, tensor1, dt), operand(b, tensor2, dt)
        both = b.emit_tmp(op, [t1, t2], None, dt, torch.broadcast_shapes(t1.shape, t2.shape))
        if value != 1:
            both = b.emit_tmp("mul", [both, b.const(value, dt)], None, dt, both.shape)
        return b.emit("add", [operand(b, input, dt), both])
    return handler


on(torch.addcmul, "addcmul")(addc("mul"))
on(torch.addcdiv, "addcdiv")(addc("div"))


@on(torch.logaddexp, "logaddexp")
def logaddexp(b, input, other):
    """max(a, b) + log1p(exp(-|a - b|)), finite where either exp would overflow."""
    dt = b.out_dtype
    a, c = operand(b, input, dt), operand(b, other, dt)
    shape = torch.broadcast_shapes(a.shape, c.shape)
    t = lambda op, args: b.emit_tmp(op, args, None, dt, shape)  # noqa: E731
    top = t("maximum", [a, c])
    rest = t("log1p", [t("exp", [t("neg", [t("abs", [t("sub", [a, c])])])])])
    return b.emit("add", [top, rest])


@on(torch.std_mean)
def std_mean(b, input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    from kforge.fx_ops.reductions import var_attrs
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
    nonzero = x if x.dtype == torch.bool else b.emit_tmp("ne", [x, b.const(0, x.dtype)], None, torch.bool, x.shape)
    # Counted in float32 (exact below 2^24 a row: kforge's reductions accumulate floats), then PyTorch's int64.
    count = b.emit_tmp("sum", [b.cast(nonzero, torch.float32)], {"dims": norm_dims(dim, x.ndim), "keepdim": False},
                       torch.float32, b.out_shape)
    return b.emit("cast", [count], {"dtype": b.ir_dtype(b.out_dtype)})


# Losses as their per-element formula, then the reduction.
def reduced(b, per_element: Val, reduction: str) -> Val:
    if reduction == "none":
        return final(b, per_element)
    if reduction not in ("mean", "sum"):
        b.refuse(f"reduction {reduction!r} is not supported")
    return b.emit(reduction, [per_element], {"dims": [], "keepdim": False})


def loss_terms(b, *operands) -> tuple:
    """The operands in the loss's dtype and their broadcast shape, and a helper emitting a step of that shape."""
    dt = b.out_dtype if b.out_dtype.is_floating_point else torch.float32
    vals = [operand(b, v, dt) for v in operands]
    shape = torch.broadcast_shapes(*[v.shape for v in vals])
    return vals, (lambda op, args, attrs=None: b.emit_tmp(op, args, attrs, dt, shape)), dt


@on(F.l1_loss)
def l1_loss(b, input, target, size_average=None, reduce=None, reduction="mean"):
    from kforge.fx_ops.common import legacy_reduction
    (x, y), t, _ = loss_terms(b, input, target)
    return reduced(b, t("abs", [t("sub", [x, y])]), legacy_reduction(size_average, reduce, reduction))


@on(F.binary_cross_entropy)
def binary_cross_entropy(b, input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(y log p + (1 - y) log(1 - p)), each log clamped at -100 as PyTorch clamps it."""
    from kforge.fx_ops.common import legacy_reduction
    (p, y), t, dt = loss_terms(b, input, target)
    one = b.const(1.0, dt)
    floor = {"min": -100.0}
    log_p = t("clamp", [t("log", [p])], floor)
    log_q = t("clamp", [t("log", [t("sub", [one, p])])], floor)
    per = t("neg", [t("add", [t("mul", [y, log_p]), t("mul", [t("sub", [one, y]), log_q])])])
    if weight is not None:
        per = t("mul", [per, operand(b, weight, dt)])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.binary_cross_entropy_with_logits)
def binary_cross_entropy_with_logits(b, input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """(1 - y) x + log(1 + exp(-x)), written max(-x, 0) + log1p(exp(-|x|)) so no exp overflows."""
    from kforge.fx_ops.common import legacy_reduction
    if pos_weight is not None:
        b.refuse("binary_cross_entropy_with_logits with pos_weight is not supported")
    (x, y), t, dt = loss_terms(b, input, target)
    soft = t("add", [t("relu", [t("neg", [x])]), t("log1p", [t("exp", [t("neg", [t("abs", [x])])])])])
    per = t("add", [t("mul", [t("sub", [b.const(1.0, dt), y]), x]), soft])
    if weight is not None:
        per = t("mul", [per, operand(b, weight, dt)])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.soft_margin_loss)
def soft_margin_loss(b, input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x))."""
    from kforge.fx_ops.common import legacy_reduction
    (x, y), t, _ = loss_terms(b, input, target)
    z = t("neg", [t("mul", [y, x])])
    return reduced(b, t("softplus", [z], {"beta": 1.0, "threshold": 20.0}), legacy_reduction(size_average, reduce, reduction))


@on(F.margin_ranking_loss)
def margin_ranking_loss(b, input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    from kforge.fx_ops.common import legacy_reduction
    (x1, x2, y), t, dt = loss_terms(b, input1, input2, target)
    per = t("relu", [t("add", [t("neg", [t("mul", [y, t("sub", [x1, x2])])]), b.const(margin, dt)])])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.hinge_embedding_loss)
def hinge_embedding_loss(b, input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y is 1, max(0, margin - x) where y is -1 (PyTorch adds both terms under their masks)."""
    from kforge.fx_ops.common import legacy_reduction
    (x, y), t, dt = loss_terms(b, input, target)
    zero = b.const(0.0, dt)
    positive = b.emit_tmp("eq", [y, b.const(1.0, dt)], None, torch.bool, x.shape if x.shape == y.shape else
                          torch.broadcast_shapes(x.shape, y.shape))
    negative = b.emit_tmp("eq", [y, b.const(-1.0, dt)], None, torch.bool, positive.shape)
    per = t("add", [t("where", [positive, x, zero]),
                    t("where", [negative, t("relu", [t("sub", [b.const(margin, dt), x])]), zero])])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


for _cls, _fn in ((nn.L1Loss, l1_loss), (nn.SoftMarginLoss, soft_margin_loss)):
    on_module(_cls)(lambda b, m, input, target, _fn=_fn: _fn(b, input, target, reduction=m.reduction))
on_module(nn.BCELoss)(lambda b, m, input, target: binary_cross_entropy(
    b, input, target, module_param(b, m, "weight"), reduction=m.reduction))
on_module(nn.BCEWithLogitsLoss)(lambda b, m, input, target: binary_cross_entropy_with_logits(
    b, input, target, module_param(b, m, "weight"), reduction=m.reduction, pos_weight=m.pos_weight))
on_module(nn.MarginRankingLoss)(lambda b, m, x1, x2, y: margin_ranking_loss(b, x1, x2, y, m.margin, reduction=m.reduction))
on_module(nn.HingeEmbeddingLoss)(lambda b, m, x, y: hinge_embedding_loss(b, x, y, m.margin, reduction=m.reduction))


# Remainders, angles and logic.
def float_binary(b, op: str, input, other) -> Val:
    dt = b.out_dtype
    if not dt.is_floating_point:
        b.refuse(f"{op} of integer tensors is not supported")
    return operand(b, input, dt), operand(b, other, dt), dt


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


@on(torch.atan2, torch.arctan2, "atan2", "arctan2")
def atan2(b, input, other):
    a, c, _ = float_binary(b, "atan2", input, other)
    return b.emit("atan2", [a, c])


@on(torch.hypot, "hypot")
def hypot(b, input, other):
    a, c, dt = float_binary(b, "hypot", input, other)
    shape = b.out_shape
    sq = lambda v: b.emit_tmp("mul", [v, v], None, dt, torch.broadcast_shapes(v.shape))  # noqa: E731
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
    return b.emit("where", [at_zero, operand(b, values, dt), step])


@on(torch.trace, "trace")
def trace(b, input):
    """The diagonal of a matrix is every (m + 1)-th element of it flattened."""
    x = tensor(b, input)
    n, m = x.shape
    flat = reshape(b, x, [n * m])
    diagonal = piece(b, flat, 0, 0, min(n, m) * (m + 1) - m, m + 1) if min(n, m) > 1 else piece(b, flat, 0, 0, 1)
    return b.emit("sum", [diagonal], {"dims": [], "keepdim": False})


@on(torch.baddbmm, "baddbmm")
def baddbmm(b, input, batch1, batch2, *, beta=1, alpha=1):
    """beta input + alpha (batch1 @ batch2)."""
    dt = b.out_dtype
    x, p, q = (b.cast(tensor(b, v), dt) for v in (input, batch1, batch2))
    product = b.emit_tmp("matmul", [p, q], None, dt, [p.shape[0], p.shape[1], q.shape[2]])
    if alpha != 1:
        product = b.emit_tmp("mul", [product, b.const(alpha, dt)], None, dt, product.shape)
    if beta == 0:
        return final(b, product)
    if beta != 1:
        x = b.emit_tmp("mul", [x, b.const(beta, dt)], None, dt, x.shape)
    return b.emit("add", [x, product])


# More losses.
@on(F.nll_loss)
def nll_loss(b, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] over log-probabilities [N, C] (as cross_entropy takes its labels)."""
    from kforge.fx_ops.common import legacy_reduction
    if weight is not None or ignore_index != -100:
        b.refuse("nll_loss with weight or a non-default ignore_index is not supported")
    x, y = tensor(b, input), tensor(b, target, "target")
    if x.ndim != 2 or y.ndim != 1 or y.dtype != torch.int64:
        b.refuse(f"nll_loss needs log-probabilities [N, C] and int64 class indices [N], got {list(x.shape)} and {list(y.shape)}")
    n = x.shape[0]
    picked = b.emit_tmp("gather", [x, reshape(b, y, [n, 1])], {"dim": 1}, x.dtype, [n, 1])
    per = b.emit_tmp("neg", [reshape(b, picked, [n])], None, x.dtype, [n])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


on_module(nn.NLLLoss)(lambda b, m, input, target: nll_loss(b, input, target, module_param(b, m, "weight"),
                                                              ignore_index=m.ignore_index, reduction=m.reduction))


@on(F.pairwise_distance, torch.pairwise_distance)
def pairwise_distance(b, x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    if p not in (1, 2, 1.0, 2.0):
        b.refuse(f"pairwise_distance of order {p} is not supported (1 and 2 are)")
    (a, c), t, dt = loss_terms(b, x1, x2)
    diff = t("add", [t("sub", [a, c]), b.const(eps, dt)])
    return b.emit("vector_norm", [diff], {"ord": int(p), "dims": [diff.ndim - 1], "keepdim": bool(keepdim)})


on_module(nn.PairwiseDistance)(lambda b, m, x1, x2: pairwise_distance(b, x1, x2, m.norm, m.eps, m.keepdim))


@on(torch.cdist)
def cdist(b, x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """||x1[.., i, :] - x2[.., j, :]||_p for every pair: the difference of broadcast views, reduced over the last dim."""
    if p not in (1, 2, 1.0, 2.0):
        b.refuse(f"cdist of order {p} is not supported (1 and 2 are)")
    a, c = tensor(b, x1), tensor(b, x2)
    if a.ndim != c.ndim or a.ndim < 2:
        b.refuse("cdist needs two tensors of the same rank, at least 2")
    lead = list(torch.broadcast_shapes(a.shape[:-2], c.shape[:-2]))
    (pa, m), (pc, _) = a.shape[-2:], c.shape[-2:]
    shape = lead + [pa, pc, m]
    ga = reshape(b, a, list(a.shape[:-2]) + [pa, 1, m])
    gc = reshape(b, c, list(c.shape[:-2]) + [1, pc, m])
    diff = b.emit_tmp("sub", [ga, gc], None, a.dtype, shape)
    return b.emit("vector_norm", [diff], {"ord": int(p), "dims": [len(shape) - 1], "keepdim": False})


@on(F.cosine_embedding_loss)
def cosine_embedding_loss(b, input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos where y is 1, max(0, cos - margin) where y is -1, cos over dim 1 (PyTorch's eps: 1e-12 on the
    squared norms)."""
    from kforge.fx_ops.common import legacy_reduction
    a, c, y = tensor(b, input1), tensor(b, input2), tensor(b, target, "target")
    if a.ndim != 2:
        b.refuse("cosine_embedding_loss needs [N, D] inputs")
    dt, n = a.dtype, a.shape[0]
    t = lambda op, args, shape=(n,): b.emit_tmp(op, args, None, dt, shape)  # noqa: E731
    dot = b.emit_tmp("sum", [t("mul", [a, c], a.shape)], {"dims": [1], "keepdim": False}, dt, (n,))
    sq = lambda v: b.emit_tmp("sum", [t("mul", [v, v], v.shape)], {"dims": [1], "keepdim": False}, dt, (n,))  # noqa: E731
    eps = b.const(1e-12, dt)
    cos = t("div", [dot, t("sqrt", [t("mul", [t("add", [sq(a), eps]), t("add", [sq(c), eps])])])])
    yv = b.cast(y, dt)
    zero = b.const(0.0, dt)
    pos = b.emit_tmp("eq", [yv, b.const(1.0, dt)], None, torch.bool, (n,))
    neg = b.emit_tmp("eq", [yv, b.const(-1.0, dt)], None, torch.bool, (n,))
    per = t("add", [t("where", [pos, t("sub", [b.const(1.0, dt), cos]), zero]),
                    t("where", [neg, t("relu", [t("sub", [cos, b.const(margin, dt)])]), zero])])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.poisson_nll_loss)
def poisson_nll_loss(b, input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - y x (log_input), or x - y log(x + eps)."""
    from kforge.fx_ops.common import legacy_reduction
    if full:
        b.refuse("poisson_nll_loss with full=True (Stirling's term) is not supported")
    (x, y), t, dt = loss_terms(b, input, target)
    per = (t("sub", [t("exp", [x]), t("mul", [y, x])]) if log_input else
           t("sub", [x, t("mul", [y, t("log", [t("add", [x, b.const(eps, dt)])])])]))
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.multilabel_soft_margin_loss)
def multilabel_soft_margin_loss(b, input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)), averaged over the classes (the last dim)."""
    from kforge.fx_ops.common import legacy_reduction
    if weight is not None:
        b.refuse("multilabel_soft_margin_loss with weight is not supported")
    (x, y), t, dt = loss_terms(b, input, target)
    soft = {"beta": 1.0, "threshold": 20.0}
    log_sig = lambda v: t("neg", [t("softplus", [t("neg", [v])], soft)])  # noqa: E731
    per = t("neg", [t("add", [t("mul", [y, log_sig(x)]), t("mul", [t("sub", [b.const(1.0, dt), y]), log_sig(t("neg", [x]))])])])
    rows = list(x.shape[:-1])
    mean = b.emit_tmp("mean", [per], {"dims": [x.ndim - 1], "keepdim": False}, dt, rows)
    return reduced(b, mean, legacy_reduction(size_average, reduce, reduction))


on_module(nn.CosineEmbeddingLoss)(lambda b, m, x1, x2, y: cosine_embedding_loss(b, x1, x2, y, m.margin, reduction=m.reduction))
on_module(nn.PoissonNLLLoss)(lambda b, m, x, y: poisson_nll_loss(b, x, y, m.log_input, m.full, eps=m.eps, reduction=m.reduction))
on_module(nn.MultiLabelSoftMarginLoss)(lambda b, m, x, y: multilabel_soft_margin_loss(
    b, x, y, module_param(b, m, "weight"), reduction=m.reduction))
