"""PyTorch ops written as compositions of the IR's own (docs/interfaces.md, "Compositions"), the shape and lookup
family: tensors like another, one position of a dim (select), repetition (repeat, tile), roll, padding (constant,
reflect, replicate, circular), resizing (nearest by whole factors, linear to any size), pixel (un)shuffle, outer products, lookups (index_select,
embedding) as gathers, arange, trace, baddbmm, matrix_power, im2col (F.unfold); and the helpers the other composition modules share
(pointwise_compositions.py, loss_compositions.py). Each is the same function as PyTorch's; forms that are not
(antialiased resizing, an embedding that renormalizes its table) are refused by name."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import filled, module_param, norm_dim, on, on_module, tensor, varargs
from kforge.fx_ops.shapes import slice_of
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
    """x[.., start:end:step, ..] along d as a step of a composition, never the FX node's own value."""
    return slice_of(b, x, d, start, end, step, node_value=False)


def diagonal_of(b, x: Val, node_value: bool = False) -> Val:
    """The diagonal of a matrix [n, m]: every (m + 1)-th element of it flattened (torch.diag, torch.trace); the FX
    node's own value with `node_value` (shapes.slice_of)."""
    n, m = x.shape
    flat = reshape(b, x, [n * m])
    return slice_of(b, flat, 0, 0, (min(n, m) - 1) * (m + 1) + 1, m + 1, node_value)


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
    return final(b, padded_dims(b, tensor(b, input), pad, mode, 0.0 if value is None else value))


def padded_dims(b, x: Val, pad, mode: str, value) -> Val:
    """`x` padded as F.pad pads it (pairs from the last dim backwards), as an intermediate value (a convolution's
    padding mode pads its input so): negative counts crop first, then one `pad` node pads every dim at once
    (ir/pad.h), one kernel however many dims it pads."""
    pairs = list(pad)
    if len(pairs) % 2 or len(pairs) // 2 > x.ndim:
        b.refuse(f"padding {pairs} does not pair up with the tensor's {x.ndim} dims")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        b.refuse(f"padding mode {mode!r} is not supported")
    v, counts = x, [0] * (2 * x.ndim)
    for k in range(len(pairs) // 2):
        d, left, right = x.ndim - 1 - k, int(pairs[2 * k]), int(pairs[2 * k + 1])
        if left < 0 or right < 0:  # negative padding crops
            v = piece(b, v, d, max(-left, 0), v.shape[d] - max(-right, 0))
        left, right, n = max(left, 0), max(right, 0), v.shape[d]
        most = n - 1 if mode == "reflect" else n if mode == "circular" else None
        if most is not None and max(left, right) > most:
            b.refuse(f"{mode} padding of {max(left, right)} on a dim of {n} (at most {most})")
        counts[2 * d], counts[2 * d + 1] = left, right
    if not any(counts):
        return v
    shape = [n + counts[2 * d] + counts[2 * d + 1] for d, n in enumerate(v.shape)]
    attrs = {"pads": counts, "mode": mode}
    if mode == "constant":
        attrs["value"] = float(value)
    return b.emit_tmp("pad", [v], attrs, v.dtype, shape)


def padded(b, v: Val, d: int, left: int, right: int, mode: str, value) -> Val:
    """`v` padded along dim d alone."""
    pairs = [0, 0] * (v.ndim - 1 - d) + [left, right]
    return padded_dims(b, v, pairs, mode, value)


for _cls, _mode in ((nn.ConstantPad1d, "constant"), (nn.ConstantPad2d, "constant"), (nn.ConstantPad3d, "constant"),
                    (nn.ZeroPad1d, "constant"), (nn.ZeroPad2d, "constant"), (nn.ZeroPad3d, "constant"),
                    (nn.ReflectionPad1d, "reflect"), (nn.ReflectionPad2d, "reflect"), (nn.ReflectionPad3d, "reflect"),
                    (nn.ReplicationPad1d, "replicate"), (nn.ReplicationPad2d, "replicate"),
                    (nn.ReplicationPad3d, "replicate"), (nn.CircularPad1d, "circular"), (nn.CircularPad2d, "circular"),
                    (nn.CircularPad3d, "circular")):
    on_module(_cls)(lambda b, m, input, _mode=_mode: pad(b, input, m.padding, _mode, getattr(m, "value", 0.0)))


# Resizing by whole factors: nearest up by f, each element f times (an expand), down by k, every k-th element (a
# strided slice; nearest-exact takes the middle one of each k); (bi/tri)linear up by f without align_corners by
# fixed weights, and to any size (align_corners either way) by two gathers a dim (linear_resize).
@on(F.interpolate, F.upsample, F.upsample_nearest, F.upsample_bilinear)
def interpolate(b, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    x = tensor(b, input)
    if b.node.target is F.upsample_bilinear:  # the deprecated function's fixed mode
        mode, align_corners = "bilinear", True
    linear = mode in ("linear", "bilinear", "trilinear")
    if mode not in ("nearest", "nearest-exact") and not linear:
        b.refuse(f"interpolate with mode={mode!r} is not supported (nearest, nearest-exact and (bi/tri)linear are)")
    if linear and antialias:
        b.refuse(f"{mode} resizing with antialias is not supported")
    factors = scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor] * (x.ndim - 2)
    v = x
    for s, (n, m) in enumerate(zip(x.shape[2:], b.out_shape[2:])):
        d = 2 + s
        # PyTorch's source scale along d without align_corners: 1 / scale_factor where one is given (and not
        # recomputed), the sizes' ratio otherwise.
        given = factors[s] if factors[s] and not recompute_scale_factor else None
        if m == n and (not linear or align_corners or given in (None, 1)):
            continue
        if linear and (align_corners or m % n or (given is not None and given * n != m)):
            v = linear_resize(b, v, d, m, align_corners, 1 / given if given and not align_corners else None)
        elif m % n == 0:
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


def linear_resize(b, v: Val, d: int, m: int, align_corners: bool, scale: float | None) -> Val:
    """Linear resizing of dim d to m by PyTorch's rule (upsample's area_pixel_compute_source_index), for any sizes:
    output j reads source position p = j (n - 1) / (m - 1) with align_corners, else max(scale (j + 1/2) - 1/2, 0)
    (scale n / m, or the given one); then in[floor p] and its next neighbour (the last element repeated past the
    end), weighted by p's fraction, two gathers. Positions, indices and weights are computed in the graph from a
    progression, in float32 as PyTorch's float kernels compute them."""
    n, f32 = v.shape[d], torch.float32
    if align_corners:
        src = progression(b, m, 0.0, (n - 1) / (m - 1) if m > 1 else 0.0, f32)
    else:
        src = progression(b, m, 0.5, 1.0, f32)
        src = b.emit_tmp("mul", [src, b.const(float(scale if scale is not None else n / m), f32)], None, f32, [m])
        src = b.emit_tmp("sub", [src, b.const(0.5, f32)], None, f32, [m])
        src = b.emit_tmp("maximum", [src, b.const(0.0, f32)], None, f32, [m])
    low = b.emit_tmp("floor", [src], None, f32, [m])
    low = b.emit_tmp("minimum", [low, b.const(float(n - 1), f32)], None, f32, [m])
    high = b.emit_tmp("minimum", [b.emit_tmp("add", [low, b.const(1.0, f32)], None, f32, [m]),
                                  b.const(float(n - 1), f32)], None, f32, [m])
    weight = b.emit_tmp("sub", [src, low], None, f32, [m])
    line = [1] * v.ndim
    line[d] = m
    shape = list(v.shape)
    shape[d] = m

    def at(index):
        idx = expand(b, reshape(b, b.cast(index, torch.int64), line), shape)
        return b.emit_tmp("gather", [v, idx], {"dim": d}, v.dtype, shape)
    w1 = b.cast(reshape(b, weight, line), v.dtype)
    w0 = b.emit_tmp("sub", [b.const(1.0, v.dtype), w1], None, v.dtype, line)
    return b.emit_tmp("add", [b.emit_tmp("mul", [at(low), w0], None, v.dtype, shape),
                              b.emit_tmp("mul", [at(high), w1], None, v.dtype, shape)], None, v.dtype, shape)


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
                                    getattr(m, "align_corners", None), getattr(m, "recompute_scale_factor", None)))


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


@on(torch.trace, "trace")
def trace(b, input):
    return b.emit("sum", [diagonal_of(b, tensor(b, input))], {"dims": [], "keepdim": False})


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


def diagonal_mask(b, k: int) -> Val:
    """[k, k] booleans, true on the main diagonal: two aranges compared (the identity, diag_embed's mask)."""
    index = progression(b, k, 0, 1, torch.float32)
    return b.emit_tmp("eq", [reshape(b, index, [k, 1]), reshape(b, index, [1, k])], None, torch.bool, [k, k])


@on(torch.matrix_power, torch.linalg.matrix_power, "matrix_power")
def matrix_power(b, input, n, *, out=None):
    """A [.., k, k] matrix to a whole power n >= 0 by PyTorch's own sequence of products (linalg_matrix_power:
    the squares of a, least significant bit first, multiplied into the result where n has a one); n = 0 is the
    identity, a comparison of two aranges. A negative n (an inverse) is refused."""
    dt = b.out_dtype
    x = b.cast(tensor(b, input), dt)
    if not isinstance(n, int) or n < 0:
        b.refuse(f"matrix_power with exponent {n!r} is not supported (whole exponents >= 0 are)")
    k = x.shape[-1]
    if n == 0:
        return final(b, expand(b, b.cast(diagonal_mask(b, k), dt), list(x.shape)))
    square, result = None, None
    while n > 0:
        bit, n = n % 2, n // 2
        square = x if square is None else b.emit_tmp("matmul", [square, square], None, dt, list(x.shape))
        if bit:
            result = square if result is None else b.emit_tmp("matmul", [result, square], None, dt, list(x.shape))
    return final(b, result)


def pairs_of(v, what: str, b) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    if len(v) != 2:
        b.refuse(f"F.unfold's {what} {v!r} is not one or two numbers")
    return int(v[0]), int(v[1])


@on(F.unfold)
def im2col(b, input, kernel_size, dilation=1, padding=0, stride=1):
    """F.unfold / nn.Unfold of an image [N, C, H, W]: every kernel offset (i, j) of every window as a strided slice
    of the zero-padded image [N, C, oh, ow], stacked after the channels in (i, j) order and flattened to PyTorch's
    [N, C kh kw, oh ow]. Kernels of more than 256 offsets are refused (a slice each)."""
    x = tensor(b, input)
    if x.ndim != 4:
        b.refuse(f"F.unfold of a {x.ndim}-D tensor (4-D images are supported)")
    (kh, kw), (dh, dw) = pairs_of(kernel_size, "kernel_size", b), pairs_of(dilation, "dilation", b)
    (ph, pw), (sh, sw) = pairs_of(padding, "padding", b), pairs_of(stride, "stride", b)
    if kh * kw > 256:
        b.refuse(f"F.unfold with a kernel of {kh} x {kw} offsets (more than 256) is not supported")
    v = padded_dims(b, x, [pw, pw, ph, ph], "constant", 0.0)
    n, c, h, w = v.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        b.refuse(f"F.unfold's kernel {kh} x {kw} (dilation {dh}, {dw}) is larger than the padded image {h} x {w}")
    offsets = []
    for i in range(kh):
        for j in range(kw):
            rows = piece(b, v, 2, i * dh, i * dh + sh * (oh - 1) + 1, sh)
            window = piece(b, rows, 3, j * dw, j * dw + sw * (ow - 1) + 1, sw)
            offsets.append(reshape(b, window, [n, c, 1, oh, ow]))
    return final(b, reshape(b, cat(b, offsets, 2), [n, c * kh * kw, oh * ow]))


on_module(nn.Unfold)(lambda b, m, input: im2col(b, input, m.kernel_size, m.dilation, m.padding, m.stride))
