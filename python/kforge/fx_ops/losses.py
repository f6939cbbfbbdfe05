"""Loss functions and cosine similarity."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import legacy_reduction, norm_dim, on, on_module, tensor
from kforge.graph_builder import Val


def loss(b, op, args, attrs) -> Val:
    return b.emit(op, [tensor(b, a) for a in args], attrs)


@on(F.mse_loss)
def mse_loss(b, input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:
        b.refuse("mse_loss with weight is not supported")
    return loss(b, "mse_loss", [input, target], {"reduction": legacy_reduction(size_average, reduce, reduction)})


@on(F.huber_loss)
def huber_loss(b, input, target, reduction="mean", delta=1.0, weight=None):
    if weight is not None:
        b.refuse("huber_loss with weight is not supported")
    return loss(b, "huber_loss", [input, target], {"reduction": reduction, "delta": delta})


@on(F.smooth_l1_loss)
def smooth_l1_loss(b, input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return loss(b, "smooth_l1_loss", [input, target],
                {"reduction": legacy_reduction(size_average, reduce, reduction), "beta": beta})


@on(F.kl_div)
def kl_div(b, input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    return loss(b, "kl_div", [input, target],
                {"reduction": legacy_reduction(size_average, reduce, reduction), "log_target": bool(log_target)})


@on(F.cross_entropy)
def cross_entropy(b, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    logits, labels = tensor(b, input), tensor(b, target)
    if ignore_index != -100 or (weight is not None and label_smoothing):
        b.refuse("cross_entropy with a non-default ignore_index, or with both weight and label_smoothing, is not "
                 "supported")
    if logits.ndim != 2 or labels.ndim != 1 or labels.dtype != torch.int64:
        b.refuse(f"cross_entropy needs logits [N, C] and int64 class indices [N], got {list(logits.shape)} "
                 f"and {labels.dtype} {list(labels.shape)}")
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is None and not label_smoothing:
        return loss(b, "cross_entropy", [logits, labels], {"reduction": reduction})
    # PyTorch's formulas over the per-sample losses: with class weights w, each sample's loss times w[target] and
    # the mean divided by the sum of those weights; with label smoothing e, (1 - e) times the loss plus e times
    # the mean over classes of -log_softmax.
    f32, n = torch.float32, logits.shape[0]
    per = b.emit_tmp("cross_entropy", [logits, labels], {"reduction": "none"}, f32, (n,))

    def scaled(v, factor):
        return b.emit_tmp("mul", [v, b.const(float(factor), f32)], None, f32, v.shape)
    if weight is not None:
        picked = b.emit_tmp("gather", [b.cast(tensor(b, weight, "class weights"), f32), labels], {"dim": 0}, f32, (n,))
        per = b.emit_tmp("mul", [per, picked], None, f32, (n,))
        if reduction == "mean":
            total = b.emit_tmp("sum", [per], {"dims": [], "keepdim": False}, f32, ())
            weights = b.emit_tmp("sum", [picked], {"dims": [], "keepdim": False}, f32, ())
            return b.emit("div", [total, weights])
    else:
        logp = b.emit_tmp("log_softmax", [logits], {"dim": 1}, f32, logits.shape)
        spread = b.emit_tmp("mean", [logp], {"dims": [1], "keepdim": False}, f32, (n,))
        per = b.emit_tmp("sub", [scaled(per, 1.0 - label_smoothing), scaled(spread, label_smoothing)], None, f32, (n,))
    if reduction == "none":
        return b.emit("reshape", [per], {"shape": [n]})
    return b.emit("sum" if reduction == "sum" else "mean", [per], {"dims": [], "keepdim": False})


@on(F.triplet_margin_loss)
def triplet_margin_loss(b, anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    if swap:
        b.refuse("triplet_margin_loss with swap=True is not supported")
    return loss(b, "triplet_margin_loss", [anchor, positive, negative],
                {"margin": margin, "p": p, "eps": eps, "reduction": legacy_reduction(size_average, reduce, reduction)})


@on(F.cosine_similarity, torch.cosine_similarity)
def cosine_similarity(b, x1, x2, dim=1, eps=1e-8):
    ndim = max(tensor(b, x1).ndim, tensor(b, x2).ndim)  # the dim counts in the broadcast shape
    return loss(b, "cosine_similarity", [x1, x2], {"dim": norm_dim(dim, ndim), "eps": eps})


on_module(nn.MSELoss)(lambda b, m, input, target: mse_loss(b, input, target, reduction=m.reduction))
on_module(nn.HuberLoss)(lambda b, m, input, target: huber_loss(b, input, target, m.reduction, m.delta))
on_module(nn.SmoothL1Loss)(lambda b, m, input, target: smooth_l1_loss(
    b, input, target, reduction=m.reduction, beta=m.beta))
on_module(nn.KLDivLoss)(lambda b, m, input, target: kl_div(
    b, input, target, reduction=m.reduction, log_target=m.log_target))
on_module(nn.CrossEntropyLoss)(lambda b, m, input, target: cross_entropy(
    b, input, target, m.weight, ignore_index=m.ignore_index, reduction=m.reduction,
    label_smoothing=m.label_smoothing))
on_module(nn.TripletMarginLoss)(lambda b, m, anchor, positive, negative: triplet_margin_loss(
    b, anchor, positive, negative, m.margin, m.p, m.eps, m.swap, reduction=m.reduction))
on_module(nn.CosineSimilarity)(lambda b, m, x1, x2: cosine_similarity(b, x1, x2, m.dim, m.eps))
