"""More ops as compositions of the IR's own (as in compositions.py), each the arithmetic PyTorch's reference
computes: differences along a dim, diagonals and diagonal matrices, channel shuffles, one-hot codes, distances,
cross products, bilinear forms, bags of embeddings, local response normalisation and power-average pooling."""
import math

import torch
import torch.nn.functional as F

from kforge.fx_ops.common import norm_dim, on, tensor
from kforge.fx_ops.compositions import cat, diagonal_mask, expand, final, padded, piece, progression, reshape
from kforge.fx_ops.matmul import product
from kforge.fx_ops.pooling import pool_geometry
from kforge.fx_ops.reductions import vector_norm_attrs


@on(torch.diff, "diff")
def diff(b, input, n=1, dim=-1, prepend=None, append=None):
    """x[1:] - x[:-1] along dim, n times, after prepend and append are concatenated (booleans differ by !=)."""
    x = tensor(b, input)
    d = norm_dim(dim, x.ndim)
    parts = [b.cast(tensor(b, p, "diff's prepend or append"), b.out_dtype) for p in (prepend, append) if p is not None]
    v = cat(b, ([parts.pop(0)] if prepend is not None else []) + [b.cast(x, b.out_dtype)] + parts, d)
    if v.shape[d] - n < 1:
        b.refuse(f"torch.diff of order {n} over {v.shape[d]} elements is empty")
    for _ in range(n):
        hi, lo = piece(b, v, d, 1, v.shape[d]), piece(b, v, d, 0, v.shape[d] - 1)
        v = b.emit_tmp("ne" if v.dtype == torch.bool else "sub", [hi, lo], None, v.dtype, hi.shape)
    return final(b, v)


@on(torch.diagonal, "diagonal")
def diagonal(b, input, offset=0, dim1=0, dim2=1):
    """The (offset) diagonal of dims dim1 and dim2, last: those two dims moved to the end and flattened, then every
    (m + 1)-th element from the diagonal's first (a strided slice, a view)."""
    x = tensor(b, input)
    d1, d2 = norm_dim(dim1, x.ndim), norm_dim(dim2, x.ndim)
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    n, m = x.shape[d1], x.shape[d2]
    length = min(n, m - offset) if offset >= 0 else min(n + offset, m)
    if length <= 0:
        b.refuse(f"torch.diagonal with offset {offset} of a {n} x {m} matrix is empty")
    lead = [x.shape[d] for d in rest]
    v = x if rest + [d1, d2] == list(range(x.ndim)) else \
        b.emit_tmp("permute", [x], {"dims": rest + [d1, d2]}, x.dtype, tuple(lead + [n, m]))
    flat = reshape(b, v, lead + [n * m])
    start = offset if offset >= 0 else -offset * m
    return final(b, piece(b, flat, len(lead), start, start + (length - 1) * (m + 1) + 1, m + 1))


@on(torch.diag_embed, "diag_embed")
def diag_embed(b, input, offset=0, dim1=-2, dim2=-1):
    """Each last-dim vector as the diagonal of a matrix in the last two dims: where(row == column, x[.., row], 0).
    Other diagonals and dims are refused."""
    x = tensor(b, input)
    if offset != 0 or norm_dim(dim1, x.ndim + 1) != x.ndim - 1 or norm_dim(dim2, x.ndim + 1) != x.ndim:
        b.refuse("torch.diag_embed off the main diagonal or into other dims than the last two is not supported")
    n = x.shape[-1]
    column = expand(b, reshape(b, x, list(x.shape) + [1]), list(x.shape) + [n])
    return b.emit("where", [diagonal_mask(b, n), column, b.const(0, x.dtype)])


@on(torch.channel_shuffle, torch.native_channel_shuffle, F.channel_shuffle)
def channel_shuffle(b, input, groups):
    """[N, C, ...] as [N, g, C / g, ...], the two group dims swapped, flattened back (ShuffleNet's shuffle)."""
    x = tensor(b, input)
    if x.ndim < 3 or x.shape[1] % groups:
        b.refuse(f"channel_shuffle of {list(x.shape)} into {groups} groups")
    n, c, rest = x.shape[0], x.shape[1], list(x.shape[2:])
    grouped = reshape(b, x, [n, groups, c // groups] + rest)
    dims = [0, 2, 1] + list(range(3, x.ndim + 1))
    swapped = b.emit_tmp("permute", [grouped], {"dims": dims}, x.dtype, tuple([n, c // groups, groups] + rest))
    return final(b, reshape(b, swapped, [n, c] + rest))


@on(F.one_hot)
def one_hot(b, tensor_, num_classes=-1):
    """x[..., None] == arange(num_classes), as int64. Without num_classes the width is the data's maximum: refused."""
    x = tensor(b, tensor_)
    if num_classes < 0:
        b.refuse("F.one_hot without num_classes takes its width from the values: give num_classes")
    classes = progression(b, num_classes, 0, 1, torch.int64)
    column = reshape(b, x, list(x.shape) + [1])
    hit = b.emit_tmp("eq", [column, classes], None, torch.bool, tuple(x.shape) + (num_classes,))
    return final(b, b.cast(hit, torch.int64))


@on(torch.dist, "dist")
def dist(b, input, other, p=2):
    """The p-norm of input - other over every element (broadcast as the difference is): the IR's vector_norm for
    orders 1 and 2, the largest |d| for inf, the count of nonzero d for 0, else (sum |d|^p)^(1/p)."""
    x, y = tensor(b, input), tensor(b, other)
    f32, shape = b.out_dtype, tuple(torch.broadcast_shapes(x.shape, y.shape))
    d = b.emit_tmp("sub", [x, y], None, f32, shape)
    p = float(p)
    if p in (1.0, 2.0):
        return b.emit("vector_norm", [d], vector_norm_attrs(b, d, p, None, False))
    size = b.emit_tmp("abs", [d], None, f32, shape)
    if p == float("inf"):
        return b.emit("amax", [size], {"dims": [], "keepdim": False})
    if p == 0:
        nonzero = b.cast(b.emit_tmp("ne", [d, b.const(0.0, f32)], None, torch.bool, shape), f32)
        return b.emit("sum", [nonzero], {"dims": [], "keepdim": False})
    powered = b.emit_tmp("pow_scalar", [size], {"exponent": p}, f32, shape)
    total = b.emit_tmp("sum", [powered], {"dims": [], "keepdim": False}, f32, ())
    return b.emit("pow_scalar", [total], {"exponent": 1.0 / p})


@on(torch.cross, torch.linalg.cross, "cross")
def cross(b, input, other, dim=None):
    """The cross product along a dim of 3 (torch.cross without dim: the first such dim, torch.linalg.cross's
    default is the last): (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)."""
    x, y = tensor(b, input), tensor(b, other)
    if x.shape != y.shape:
        b.refuse("torch.cross of operands of different shapes is not supported")
    if dim is None:
        dim = -1 if b.node.target is torch.linalg.cross else next((i for i, s in enumerate(x.shape) if s == 3), None)
        if dim is None:
            b.refuse("torch.cross needs a dim of 3 elements")
    d = norm_dim(dim, x.ndim)
    if x.shape[d] != 3:
        b.refuse(f"torch.cross along a dim of {x.shape[d]} elements (3 needed)")
    a = [piece(b, x, d, i, i + 1) for i in range(3)]
    c = [piece(b, y, d, i, i + 1) for i in range(3)]

    def term(i, j):  # a_i c_j - a_j c_i
        shape = a[0].shape
        left = b.emit_tmp("mul", [a[i], c[j]], None, b.out_dtype, shape)
        right = b.emit_tmp("mul", [a[j], c[i]], None, b.out_dtype, shape)
        return b.emit_tmp("sub", [left, right], None, b.out_dtype, shape)
    return final(b, cat(b, [term(1, 2), term(2, 0), term(0, 1)], d))


@on(F.bilinear, torch.bilinear)
def bilinear(b, input1, input2, weight, bias=None):
    """y[.., o] = x1 A[o] x2 + bias[o] (nn.Bilinear): one product of x1 [B, I] with A as [I, O J], then each output's J
    terms times x2 summed."""
    x1, x2, a = tensor(b, input1), tensor(b, input2), tensor(b, weight, "bilinear weight")
    o, i, j = a.shape
    lead = list(x1.shape[:-1])
    rows = math.prod(lead)
    f32 = b.out_dtype
    by_input = b.emit_tmp("permute", [a], {"dims": [1, 0, 2]}, a.dtype, (i, o, j))
    t = product(b, reshape(b, x1, [rows, i]), reshape(b, by_input, [i, o * j]), final=False)
    terms = b.emit_tmp("mul", [reshape(b, t, [rows, o, j]), reshape(b, x2, [rows, 1, j])], None, f32, (rows, o, j))
    y = b.emit_tmp("sum", [terms], {"dims": [2], "keepdim": False}, f32, (rows, o))
    if bias is not None:
        y = b.emit_tmp("add", [y, tensor(b, bias, "bilinear bias")], None, f32, (rows, o))
    return final(b, reshape(b, y, lead + [o]))


@on(F.embedding_bag)
def embedding_bag(b, input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Bags of equal length (a 2-D input [B, L]): the rows gathered as [B, L, D], each times its per-sample weight
    (mode sum), then summed, averaged or maximised over L. Offsets (bags of any length), padding_idx and max_norm
    are refused."""
    idx, table = tensor(b, input, "indices"), tensor(b, weight, "weight")
    if offsets is not None or idx.ndim != 2:
        b.refuse("embedding_bag with offsets (a 1-D input) is not supported: bags of equal length, a 2-D input, are")
    if padding_idx is not None or max_norm is not None:
        b.refuse("embedding_bag with padding_idx or max_norm is not supported")
    bags, length, width = idx.shape[0], idx.shape[1], table.shape[1]
    flat = expand(b, reshape(b, b.cast(idx, torch.int64), [bags * length, 1]), [bags * length, width])
    rows = reshape(b, b.emit_tmp("gather", [table, flat], {"dim": 0}, table.dtype, [bags * length, width]),
                   [bags, length, width])
    if per_sample_weights is not None:
        if mode != "sum":
            b.refuse("embedding_bag's per_sample_weights need mode 'sum'")
        w = reshape(b, tensor(b, per_sample_weights, "per_sample_weights"), [bags, length, 1])
        rows = b.emit_tmp("mul", [rows, w], None, table.dtype, rows.shape)
    op = {"sum": "sum", "mean": "mean", "max": "amax"}.get(mode)
    if op is None:
        b.refuse(f"embedding_bag mode {mode!r}")
    return b.emit(op, [rows], {"dims": [1], "keepdim": False})


@on(F.local_response_norm)
def local_response_norm(b, input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, the window zero-padded by size // 2
    before and (size - 1) // 2 after (PyTorch's average pool counts the padding): a sum of shifted slices."""
    x = tensor(b, input)
    if x.ndim < 3:
        b.refuse(f"local_response_norm of a {x.ndim}-dim input (3 or more needed)")
    f32, c = x.dtype, x.shape[1]
    square = b.emit_tmp("mul", [x, x], None, f32, x.shape)
    wide = padded(b, square, 1, size // 2, (size - 1) // 2, "constant", 0.0)
    total = piece(b, wide, 1, 0, c)
    for j in range(1, size):
        total = b.emit_tmp("add", [total, piece(b, wide, 1, j, j + c)], None, f32, x.shape)
    scaled = b.emit_tmp("mul", [total, b.const(alpha / size, f32)], None, f32, x.shape)
    shifted = b.emit_tmp("add", [scaled, b.const(float(k), f32)], None, f32, x.shape)
    denominator = b.emit_tmp("pow_scalar", [shifted], {"exponent": float(beta)}, f32, x.shape)
    return b.emit("div", [x, denominator])


def lp_pool_handler(nd):
    def handler(b, input, norm_type, kernel_size, stride=None, ceil_mode=False):
        """PyTorch's: the average pool of x^p times the window's size, sign(s) relu(|s|) to the power 1 / p."""
        x = tensor(b, input)
        attrs = pool_geometry(b, nd, x, kernel_size, stride, 0)
        attrs.update(count_include_pad=True, ceil_mode=bool(ceil_mode))
        p, f32 = float(norm_type), x.dtype
        powered = b.emit_tmp("pow_scalar", [x], {"exponent": p}, f32, x.shape)
        pooled = b.emit_tmp("avg_pool", [powered], attrs, f32, tuple(b.out_shape))
        window = math.prod(attrs["kernel"])
        shape = pooled.shape
        signed = b.emit_tmp("mul", [b.emit_tmp("sign", [pooled], None, f32, shape),
                                    b.emit_tmp("relu", [b.emit_tmp("abs", [pooled], None, f32, shape)], None, f32, shape)],
                            None, f32, shape)
        summed = b.emit_tmp("mul", [signed, b.const(float(window), f32)], None, f32, shape)
        return b.emit("pow_scalar", [summed], {"exponent": 1.0 / p})
    return handler


for _nd, _fn in ((1, F.lp_pool1d), (2, F.lp_pool2d), (3, getattr(F, "lp_pool3d", None))):
    if _fn is not None:  # lp_pool3d is newer than the others
        on(_fn)(lp_pool_handler(_nd))
