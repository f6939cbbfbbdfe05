"""Losses written as compositions of the IR's own ops (docs/interfaces.md, "Compositions"): the per-element formula,
then the reduction. l1, binary cross-entropy (with logits too), soft margin, margin ranking, hinge embedding, NLL,
cosine embedding, Poisson NLL, multilabel soft margin; pairwise distances and cdist."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import as_dtype, legacy_reduction, module_param, on, on_module, tensor
from kforge.fx_ops.compositions import final, reshape
from kforge.graph_builder import Val


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
    vals = [as_dtype(b, v, dt) for v in operands]
    shape = torch.broadcast_shapes(*[v.shape for v in vals])
    return vals, (lambda op, args, attrs=None: b.emit_tmp(op, args, attrs, dt, shape)), dt


@on(F.l1_loss)
def l1_loss(b, input, target, size_average=None, reduce=None, reduction="mean"):
    (x, y), t, _ = loss_terms(b, input, target)
    return reduced(b, t("abs", [t("sub", [x, y])]), legacy_reduction(size_average, reduce, reduction))


@on(F.binary_cross_entropy)
def binary_cross_entropy(b, input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(y log p + (1 - y) log(1 - p)), each log clamped at -100 as PyTorch clamps it."""
    (p, y), t, dt = loss_terms(b, input, target)
    one = b.const(1.0, dt)
    floor = {"min": -100.0}
    log_p = t("clamp", [t("log", [p])], floor)
    log_q = t("clamp", [t("log", [t("sub", [one, p])])], floor)
    per = t("neg", [t("add", [t("mul", [y, log_p]), t("mul", [t("sub", [one, y]), log_q])])])
    if weight is not None:
        per = t("mul", [per, as_dtype(b, weight, dt)])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.binary_cross_entropy_with_logits)
def binary_cross_entropy_with_logits(b, input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """(1 - y) x + log(1 + exp(-x)), written max(-x, 0) + log1p(exp(-|x|)) so no exp overflows."""
    if pos_weight is not None:
        b.refuse("binary_cross_entropy_with_logits with pos_weight is not supported")
    (x, y), t, dt = loss_terms(b, input, target)
    soft = t("add", [t("relu", [t("neg", [x])]), t("log1p", [t("exp", [t("neg", [t("abs", [x])])])])])
    per = t("add", [t("mul", [t("sub", [b.const(1.0, dt), y]), x]), soft])
    if weight is not None:
        per = t("mul", [per, as_dtype(b, weight, dt)])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.soft_margin_loss)
def soft_margin_loss(b, input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x))."""
    (x, y), t, _ = loss_terms(b, input, target)
    z = t("neg", [t("mul", [y, x])])
    return reduced(b, t("softplus", [z], {"beta": 1.0, "threshold": 20.0}), legacy_reduction(size_average, reduce, reduction))


@on(F.margin_ranking_loss)
def margin_ranking_loss(b, input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    (x1, x2, y), t, dt = loss_terms(b, input1, input2, target)
    per = t("relu", [t("add", [t("neg", [t("mul", [y, t("sub", [x1, x2])])]), b.const(margin, dt)])])
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.hinge_embedding_loss)
def hinge_embedding_loss(b, input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y is 1, max(0, margin - x) where y is -1 (PyTorch adds both terms under their masks)."""
    (x, y), t, dt = loss_terms(b, input, target)
    zero = b.const(0.0, dt)
    positive = b.emit_tmp("eq", [y, b.const(1.0, dt)], None, torch.bool, y.shape)
    negative = b.emit_tmp("eq", [y, b.const(-1.0, dt)], None, torch.bool, y.shape)
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


# More losses.
@on(F.nll_loss)
def nll_loss(b, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] over log-probabilities [N, C] (as cross_entropy takes its labels)."""
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
    if full:
        b.refuse("poisson_nll_loss with full=True (Stirling's term) is not supported")
    (x, y), t, dt = loss_terms(b, input, target)
    per = (t("sub", [t("exp", [x]), t("mul", [y, x])]) if log_input else
           t("sub", [x, t("mul", [y, t("log", [t("add", [x, b.const(eps, dt)])])])]))
    return reduced(b, per, legacy_reduction(size_average, reduce, reduction))


@on(F.multilabel_soft_margin_loss)
def multilabel_soft_margin_loss(b, input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)), averaged over the classes (the last dim)."""
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
