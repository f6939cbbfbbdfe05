"""Matrix products: torch.matmul and `@`, mm, bmm, addmm, F.linear and nn.Linear, all as the IR's `matmul` (torch.matmul
semantics); a product with torch.diag(v) as a broadcast multiply. A Linear's weight [N, K] is read through a permute, never copied: the lowering turns a permute of the last
two dims into cuBLASLt's transpose flag, and a bias add (and a following ReLU or tanh-GELU) into its epilogue."""
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import as_dtype, module_param, on, on_module, tensor


def operands(b, *values):
    xs = [tensor(b, v, "matmul operand") for v in values]
    for x in xs:
        if x.dtype != torch.float32:
            b.refuse(f"matrix products are supported in float32 only, got {x.dtype}")
    return xs


def product(b, x, y, final=True):
    """x @ y as the current FX node's result (final) or as an intermediate, its shape by torch.matmul's own rules."""
    if final:
        return b.emit("matmul", [x, y])
    out = torch.matmul(torch.empty(x.shape, device="meta"), torch.empty(y.shape, device="meta")).shape
    return b.emit_tmp("matmul", [x, y], {}, torch.float32, out)


class DiagonalMatrix:
    """torch.diag(v) of a vector v [N], kept as v: a product with it scales rows (diag(v) @ B = v[:, None] * B) or
    columns (A @ diag(v) = A * v), a broadcast multiply over the other operand, never a dense N x N matrix."""
    def __init__(self, v):
        self.v = v


@on(torch.diag, "diag")
def diag(b, input, diagonal=0):
    v = tensor(b, input)
    if v.ndim != 1 or diagonal != 0:
        b.refuse("torch.diag is supported for a vector (diagonal 0) as an operand of a matrix product only; "
                 f"got a {v.ndim}-D tensor, diagonal {diagonal}")
    return DiagonalMatrix(v)


def diagonal_product(b, left, right):
    if isinstance(left, DiagonalMatrix) and isinstance(right, DiagonalMatrix):
        b.refuse("a product of two diagonal matrices is not supported")
    if isinstance(left, DiagonalMatrix):
        (v,) = operands(b, left.v)
        (m,) = operands(b, right)
        if m.ndim != 2 or m.shape[0] != v.shape[0]:
            b.refuse(f"diag(v) @ B needs B of shape [{v.shape[0]}, M], got {list(m.shape)}")
        column = b.emit_tmp("reshape", [v], {"shape": [v.shape[0], 1]}, v.dtype, (v.shape[0], 1))
        return b.emit("mul", [column, m])
    (m,) = operands(b, left)
    (v,) = operands(b, right.v)
    if m.ndim < 1 or m.shape[-1] != v.shape[0]:
        b.refuse(f"A @ diag(v) needs A's last dim to be {v.shape[0]}, got {list(m.shape)}")
    return b.emit("mul", [m, v])


@on(torch.matmul, operator.matmul, "matmul", torch.mm, "mm", torch.bmm, "bmm")
def matmul(b, input, other):
    if isinstance(input, DiagonalMatrix) or isinstance(other, DiagonalMatrix):
        return diagonal_product(b, input, other)
    x, y = operands(b, input, other)
    return product(b, x, y)


def transposed(b, w):
    """weight.T of a Linear's [N, K] weight, as a view."""
    if w.ndim != 2:
        b.refuse(f"linear needs a 2-D weight, got shape {list(w.shape)}")
    return b.emit_tmp("permute", [w], {"dims": [1, 0]}, w.dtype, (w.shape[1], w.shape[0]))


@on(F.linear)
def linear(b, input, weight, bias=None):
    x, w = operands(b, input, weight)
    if bias is None:
        return product(b, x, transposed(b, w))
    (bias,) = operands(b, bias)
    return b.emit("add", [product(b, x, transposed(b, w), final=False), bias])


on_module(nn.Linear)(lambda b, m, input: linear(b, input, module_param(b, m, "weight"), module_param(b, m, "bias")))


@on(torch.addmm, "addmm")
def addmm(b, input, mat1, mat2, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2); the scalings appear only when they are not 1."""
    c, x, y = operands(b, input, mat1, mat2)
    mm = product(b, x, y, final=False)
    if alpha != 1:
        mm = b.emit_tmp("mul", [mm, as_dtype(b, alpha, torch.float32)], {}, torch.float32, mm.shape)
    if beta != 1:
        c = b.emit_tmp("mul", [c, as_dtype(b, beta, torch.float32)], {}, torch.float32, c.shape)
    return b.emit("add", [mm, c])


@on(F.scaled_dot_product_attention)
def scaled_dot_product_attention(b, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v, as PyTorch's math reference computes it: a boolean mask (and is_causal's
    lower triangle) puts -inf where it is false, a float mask is added. Dropout is random: only dropout_p = 0."""
    q, k, v = operands(b, query, key, value)
    if dropout_p:
        b.refuse("scaled_dot_product_attention with dropout_p > 0 is random: kforge cannot verify it")
    if enable_gqa or q.shape[:-2] != k.shape[:-2]:
        b.refuse("scaled_dot_product_attention with grouped query heads (enable_gqa) is not supported")
    L, S = q.shape[-2], k.shape[-2]
    dims = list(range(k.ndim))
    kt = b.emit_tmp("permute", [k], {"dims": dims[:-2] + [dims[-1], dims[-2]]}, k.dtype, k.shape[:-2] + (k.shape[-1], S))
    scores = product(b, q, kt, final=False)
    factor = scale if scale is not None else 1.0 / q.shape[-1] ** 0.5
    scores = b.emit_tmp("mul", [scores, b.const(factor, torch.float32)], None, torch.float32, scores.shape)
    if is_causal:
        if attn_mask is not None:
            b.refuse("scaled_dot_product_attention takes attn_mask or is_causal, not both")
        ones = b.emit_tmp("expand", [b.const(1.0, torch.float32)], {"shape": [L, S]}, torch.float32, (L, S))
        lower = b.emit_tmp("triangle", [ones], {"upper": False, "diagonal": 0}, torch.float32, (L, S))
        attn_mask = b.cast(lower, torch.bool)
    if attn_mask is not None:
        mask = tensor(b, attn_mask, "attn_mask")
        if mask.dtype == torch.bool:
            scores = b.emit_tmp("where", [mask, scores, b.const(float("-inf"), torch.float32)], None, torch.float32,
                                scores.shape)
        else:
            scores = b.emit_tmp("add", [scores, b.cast(mask, torch.float32)], None, torch.float32, scores.shape)
    weights = b.emit_tmp("softmax", [scores], {"dim": len(scores.shape) - 1}, torch.float32, scores.shape)
    return product(b, weights, v)
