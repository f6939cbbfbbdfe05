"""Matrix products: torch.matmul and `@`, mm, bmm, addmm, F.linear and nn.Linear, all as the IR's `matmul` (torch.matmul
semantics); a product with torch.diag(v) as a broadcast multiply. A Linear's weight [N, K] is read through a permute, never copied: the lowering turns a permute of the last
two dims into cuBLASLt's transpose flag, and a bias add (and a following ReLU or tanh-GELU) into its epilogue."""
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.dtypes import FLOATS
from kforge.fx_ops.common import Multi, as_dtype, half_storage, module_param, on, on_module, tensor
from kforge.fx_ops.compositions import diagonal_of
from kforge.graph_builder import Val


def operands(b, *values):
    xs = [tensor(b, v, "matmul operand") for v in values]
    for x in xs:
        if x.dtype not in FLOATS:
            b.refuse(f"matrix products are supported in float32, float16 and bfloat16, got {x.dtype}")
    return xs


def product(b, x, y, final=True):
    """x @ y as the current FX node's result (final) or as an intermediate, its shape by torch.matmul's own rules and
    its dtype by PyTorch's (a product of two half-precision tensors is one: half_storage)."""
    storage = half_storage(x, y)
    if final:
        return b.emit("matmul", [x, y], storage)
    out = torch.matmul(torch.empty(x.shape, device="meta"), torch.empty(y.shape, device="meta")).shape
    return b.emit_tmp("matmul", [x, y], storage, x.dtype if storage else torch.float32, out)


class DiagonalMatrix:
    """torch.diag(v) of a vector v [N], kept as v: a product with it scales rows (diag(v) @ B = v[:, None] * B) or
    columns (A @ diag(v) = A * v), a broadcast multiply over the other operand, never a dense N x N matrix."""
    def __init__(self, v):
        self.v = v
        self.matrix = None

    def dense(self, b) -> Val:
        """The N x N matrix itself, where something other than a product reads it: v down the diagonal (each row
        v[i] broadcast, then only the diagonal of both triangles kept), 0 elsewhere."""
        if self.matrix is None:
            n, dt = self.v.shape[0], self.v.dtype
            column = b.emit_tmp("reshape", [self.v], {"shape": [n, 1]}, dt, (n, 1))
            rows = b.emit_tmp("expand", [column], {"shape": [n, n]}, dt, (n, n))
            upper = b.emit_tmp("triangle", [rows], {"upper": True, "diagonal": 0}, dt, (n, n))
            self.matrix = b.emit_tmp("triangle", [upper], {"upper": False, "diagonal": 0}, dt, (n, n))
        return self.matrix


@on(torch.diag, "diag")
def diag(b, input, diagonal=0):
    v = tensor(b, input)
    if diagonal != 0 or v.ndim not in (1, 2):
        b.refuse(f"torch.diag of a {v.ndim}-D tensor with diagonal {diagonal} is not supported (vectors and matrices, "
                 "diagonal 0)")
    if v.ndim == 2:
        return diagonal_of(b, v, node_value=True)
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


def attention_weights(b, q: Val, k: Val, attn_mask=None, is_causal=False, scale=None) -> Val:
    """softmax(q @ k^T * scale + mask) as PyTorch's math reference computes it: a boolean mask (and is_causal's lower
    triangle) puts -inf where it is false, a float mask is added. Intermediate values only."""
    L, S = q.shape[-2], k.shape[-2]
    dims = list(range(k.ndim))
    kt = b.emit_tmp("permute", [k], {"dims": dims[:-2] + [dims[-1], dims[-2]]}, k.dtype, k.shape[:-2] + (k.shape[-1], S))
    scores = product(b, q, kt, final=False)
    factor = scale if scale is not None else 1.0 / q.shape[-1] ** 0.5
    scores = b.emit_tmp("mul", [scores, b.const(factor, torch.float32)], None, torch.float32, scores.shape)
    if is_causal:
        if attn_mask is not None:
            b.refuse("attention takes attn_mask or is_causal, not both")
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
    return b.emit_tmp("softmax", [scores], {"dim": len(scores.shape) - 1}, torch.float32, scores.shape)


@on(F.scaled_dot_product_attention)
def scaled_dot_product_attention(b, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v (attention_weights). Dropout is random: only dropout_p = 0."""
    q, k, v = operands(b, query, key, value)
    if dropout_p:
        b.refuse("scaled_dot_product_attention with dropout_p > 0 is random: kforge cannot verify it")
    if enable_gqa or q.shape[:-2] != k.shape[:-2]:
        b.refuse("scaled_dot_product_attention with grouped query heads (enable_gqa) is not supported")
    return product(b, attention_weights(b, q, k, attn_mask, is_causal, scale), v)


@on_module(nn.MultiheadAttention)
def multihead_attention(b, m, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                        average_attn_weights=True, is_causal=False):
    """nn.MultiheadAttention: its packed projections and the attention as F.multi_head_attention_forward computes
    them (multihead_attention_core)."""
    refuse_unsupported_attention(b, bool(m.dropout) and m.training, not m._qkv_same_embed_dim or m.bias_k is not None or
                                 m.add_zero_attn or m.in_proj_bias is None)
    name, E = b.node.target, m.embed_dim
    weights = (module_param(b, m, "in_proj_weight"), module_param(b, m, "in_proj_bias"),
               b.param(f"{name}.out_proj.weight", m.out_proj.weight.dtype, (E, E)),
               b.param(f"{name}.out_proj.bias", m.out_proj.bias.dtype, (E,)))
    return multihead_attention_core(b, operands(b, query, key, value), E, m.num_heads, weights, m.batch_first,
                                    key_padding_mask, attn_mask, need_weights, average_attn_weights, is_causal)


@on(F.multi_head_attention_forward)
def multi_head_attention_forward(b, query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """The functional form (what dynamo's capture records of an nn.MultiheadAttention inside a module it traces
    through, nn.TransformerEncoderLayer's): inputs [L, N, E]."""
    refuse_unsupported_attention(b, bool(dropout_p) and training, use_separate_proj_weight or bias_k is not None or
                                 add_zero_attn or in_proj_bias is None or static_k is not None)
    weights = tuple(tensor(b, t, "attention weight") for t in (in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias))
    return multihead_attention_core(b, operands(b, query, key, value), int(embed_dim_to_check), int(num_heads), weights,
                                    False, key_padding_mask, attn_mask, need_weights, average_attn_weights, is_causal)


def refuse_unsupported_attention(b, random_dropout: bool, unusual_projection: bool) -> None:
    if random_dropout:
        b.refuse("multi-head attention with dropout in training mode is random: kforge cannot verify it")
    if unusual_projection:
        b.refuse("multi-head attention with separate q/k/v projections, bias_k/bias_v, add_zero_attn, static keys or no "
                 "bias is not supported")


def multihead_attention_core(b, qkv, E, H, weights, batch_first, key_padding_mask, attn_mask, need_weights,
                             average_attn_weights, is_causal=False):
    """Multi-head attention as its reference computes it: the packed input projection's three row blocks, heads of
    E / H, attention per head (attention_weights) under the masks, the output projection; (output, weights averaged
    over heads, or per head). Masks as nn.MultiheadAttention reads them: a boolean True is a position NOT attended
    (-inf), a float mask is added; attn_mask [L, S] or [N * H, L, S], key_padding_mask [N, S]. Each part is emitted
    when picked; what both need, once. is_causal is PyTorch's hint: with no key padding mask and no weights asked
    for, the attention is causal whatever attn_mask holds (PyTorch drops it), else attn_mask is used."""
    if is_causal and attn_mask is None:
        b.refuse("multi-head attention with is_causal needs attn_mask")
    causal = bool(is_causal) and key_padding_mask is None and not need_weights
    q_in, k_in, v_in = qkv
    if q_in.ndim != 3:
        b.refuse("unbatched multi-head attention inputs are not supported")
    w_in, b_in, w_out, b_out = weights
    done = {}

    def tmp(op, args, attrs, shape):
        return b.emit_tmp(op, args, attrs, torch.float32, tuple(shape))

    def batch_first_of(x):  # (L, N, E) -> (N, L, E) unless the module takes batches first
        return x if batch_first else tmp("permute", [x], {"dims": [1, 0, 2]}, (x.shape[1], x.shape[0], x.shape[2]))

    def heads(x, block):  # the block-th projection of x [N, T, E], as [N, H, T, E / H]
        w = tmp("slice", [w_in], {"dim": 0, "start": block * E, "end": (block + 1) * E, "step": 1}, (E, E))
        bias = tmp("slice", [b_in], {"dim": 0, "start": block * E, "end": (block + 1) * E, "step": 1}, (E,))
        y = tmp("add", [product(b, x, transposed(b, w), final=False), bias], None, x.shape)
        n, t = x.shape[0], x.shape[1]
        y = tmp("reshape", [y], {"shape": [n, t, H, E // H]}, (n, t, H, E // H))
        return tmp("permute", [y], {"dims": [0, 2, 1, 3]}, (n, H, t, E // H))

    def additive(mask, shape):  # a mask as the float it adds to the scores, reshaped to broadcast against them
        m = tensor(b, mask, "attention mask")
        if m.dtype == torch.bool:
            m = tmp("where", [m, b.const(float("-inf"), torch.float32), b.const(0.0, torch.float32)], None, m.shape)
        else:
            m = b.cast(m, torch.float32)
        return tmp("reshape", [m], {"shape": list(shape)}, shape)

    def mask_of(n, L, S):
        masks = []
        if attn_mask is not None:
            ndim = tensor(b, attn_mask, "attn_mask").ndim
            if ndim not in (2, 3):
                b.refuse(f"an attn_mask of {ndim} dims is not supported ([L, S] or [N * H, L, S])")
            masks.append(additive(attn_mask, (L, S) if ndim == 2 else (n, H, L, S)))
        if key_padding_mask is not None:
            masks.append(additive(key_padding_mask, (n, 1, 1, S)))
        if len(masks) == 2:
            shape = (n, H, L, S) if len(masks[0].shape) == 4 else (n, 1, L, S)
            return tmp("add", masks, None, shape)
        return masks[0] if masks else None

    def attention():
        if not done:
            q, k, v = heads(batch_first_of(q_in), 0), heads(batch_first_of(k_in), 1), heads(batch_first_of(v_in), 2)
            mask = None if causal else mask_of(q.shape[0], q.shape[2], k.shape[2])
            done["weights"] = attention_weights(b, q, k, mask, is_causal=causal)
            done["heads"] = product(b, done["weights"], v, final=False)
        return done

    def output():
        o = attention()["heads"]  # [N, H, L, D]
        n, L = o.shape[0], o.shape[2]
        o = tmp("permute", [o], {"dims": [0, 2, 1, 3]}, (n, L, H, E // H))
        o = tmp("reshape", [o], {"shape": [n, L, E]}, (n, L, E))
        o = tmp("add", [product(b, o, transposed(b, w_out), final=False), b_out], None, (n, L, E))
        return b.emit("permute", [o], {"dims": [1, 0, 2]}) if not batch_first else b.emit("reshape", [o], {"shape": [n, L, E]})

    def weights_of():
        w = attention()["weights"]  # [N, H, L, S]
        if average_attn_weights:
            return b.emit("mean", [w], {"dims": [1], "keepdim": False})
        return b.emit("reshape", [w], {"shape": list(w.shape)})

    return Multi(output, weights_of) if need_weights else Multi(output, lambda: b.refuse("no attention weights"))


@on(torch.einsum)
def einsum(b, equation, *operands_):
    """Einstein sums of one or two operands as the IR's views, sums and one product: each operand's indices found
    only in it and not in the output summed first; then, for two operands, batch indices (in both and the output),
    the contraction (in both only) and each side's own indices laid out as [batch, rows, k] @ [batch, k, cols], the
    result reshaped and permuted to the output's order. Repeated indices in one operand (diagonals) and '...' are
    refused."""
    if len(operands_) == 1 and isinstance(operands_[0], (list, tuple)):
        operands_ = tuple(operands_[0])
    xs = [tensor(b, v, "einsum operand") for v in operands_]
    eq = equation.replace(" ", "")
    if "..." in eq:
        b.refuse("einsum with '...' is not supported")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    terms = lhs.split(",")
    if len(terms) != len(xs) or len(xs) not in (1, 2):
        b.refuse("einsum of one or two operands is supported")
    if out is None:  # implicit output: the indices seen once, in alphabetical order
        seen = "".join(terms)
        out = "".join(sorted(c for c in set(seen) if seen.count(c) == 1))
    for t, x in zip(terms, xs):
        if len(set(t)) != len(t):
            b.refuse(f"einsum term '{t}' repeats an index (a diagonal): not supported")
        if len(t) != x.ndim:
            b.refuse(f"einsum term '{t}' has {len(t)} indices for a tensor of {x.ndim} dims")
    size = {c: x.shape[i] for t, x in zip(terms, xs) for i, c in enumerate(t)}

    def tmp(op, args, attrs, shape):
        return b.emit_tmp(op, args, attrs, xs[0].dtype, tuple(shape))

    def summed_alone(t, x, keep):  # sum the indices of t found in no other term nor the output
        gone = [i for i, c in enumerate(t) if c not in keep]
        if not gone:
            return t, x
        t2 = "".join(c for c in t if c in keep)
        return t2, tmp("sum", [x], {"dims": gone, "keepdim": False}, [size[c] for c in t2])

    def permuted(t, x, order):
        if t == order:
            return x
        return tmp("permute", [x], {"dims": [t.index(c) for c in order]}, [size[c] for c in order])

    def reshaped(x, shape):
        return x if tuple(x.shape) == tuple(shape) else tmp("reshape", [x], {"shape": list(shape)}, shape)

    def prod(cs):
        n = 1
        for c in cs:
            n *= size[c]
        return n

    if len(xs) == 1:
        t, x = summed_alone(terms[0], xs[0], set(out))
        return b.emit("permute", [x], {"dims": [t.index(c) for c in out]}) if t != out else b.emit("reshape", [x], {"shape": list(b.out_shape)})
    (ta, a), (tb, y) = summed_alone(terms[0], xs[0], set(out) | set(terms[1])), summed_alone(terms[1], xs[1], set(out) | set(terms[0]))
    if a.dtype not in FLOATS or y.dtype not in FLOATS:
        b.refuse("einsum products are supported in float32, float16 and bfloat16")
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    rows = [c for c in ta if c not in tb]
    cols = [c for c in tb if c not in ta]
    a3 = reshaped(permuted(ta, a, "".join(batch + rows + contract)), [prod(batch), prod(rows), prod(contract)])
    y3 = reshaped(permuted(tb, y, "".join(batch + contract + cols)), [prod(batch), prod(contract), prod(cols)])
    r = product(b, a3, y3, final=False)
    order = "".join(batch + rows + cols)
    if order == out:
        return b.emit("reshape", [r], {"shape": list(b.out_shape)})
    return b.emit("permute", [reshaped(r, [size[c] for c in order])], {"dims": [order.index(c) for c in out]})
