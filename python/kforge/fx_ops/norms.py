"""Row ops: softmax, log_softmax and the normalisation layers (layer, RMS, batch, group, instance)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import module_param, norm_dim, on, on_module, tensor, unary


def softmax_dim(dim, ndim):
    # F.softmax(x) without dim: PyTorch's legacy implicit choice (torch.nn.functional._get_softmax_dim).
    return (0 if ndim in (0, 1, 3) else 1) if dim is None else norm_dim(dim, ndim)


def row_handler(op):
    def handler(b, input, dim=None, _stacklevel=3, dtype=None):
        x = tensor(b, input)
        return unary(b, op, x, {"dim": softmax_dim(dim, x.ndim)})
    return handler


on(F.softmax, torch.softmax, "softmax")(row_handler("softmax"))
on(F.log_softmax, torch.log_softmax, "log_softmax")(row_handler("log_softmax"))
on_module(nn.Softmax)(lambda b, m, input: row_handler("softmax")(b, input, m.dim))
on_module(nn.LogSoftmax)(lambda b, m, input: row_handler("log_softmax")(b, input, m.dim))


@on(F.layer_norm)
def layer_norm(b, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    return b.emit("layer_norm", [tensor(b, input), weight, bias], {"normalized_ndim": n, "eps": eps})


@on(F.rms_norm)
def rms_norm(b, input, normalized_shape, weight=None, eps=None):
    x = tensor(b, input)
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    eps = torch.finfo(x.dtype).eps if eps is None else eps  # PyTorch's default when eps is None
    return b.emit("rms_norm", [x, weight], {"normalized_ndim": n, "eps": eps})


@on(F.batch_norm)
def batch_norm(b, input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    if not training and (running_mean is not None or running_var is not None):
        b.refuse("batch_norm with running statistics (eval mode) is not supported yet; "
                 "kforge supports batch statistics (training mode)")
    return b.emit("batch_norm", [tensor(b, input), weight, bias], {"eps": eps})


@on(F.group_norm)
def group_norm(b, input, num_groups, weight=None, bias=None, eps=1e-5):
    return b.emit("group_norm", [tensor(b, input), weight, bias], {"groups": num_groups, "eps": eps})


@on(F.instance_norm)
def instance_norm(b, input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    if not use_input_stats:
        b.refuse("instance_norm with running statistics is not supported yet; kforge supports input statistics")
    return b.emit("instance_norm", [tensor(b, input), weight, bias], {"eps": eps})


on_module(nn.LayerNorm)(lambda b, m, input: layer_norm(
    b, input, m.normalized_shape, module_param(b, m, "weight"), module_param(b, m, "bias"), m.eps))
on_module(nn.RMSNorm)(lambda b, m, input: rms_norm(b, input, m.normalized_shape, module_param(b, m, "weight"), m.eps))
on_module(nn.GroupNorm)(lambda b, m, input: group_norm(
    b, input, m.num_groups, module_param(b, m, "weight"), module_param(b, m, "bias"), m.eps))


@on_module(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def batch_norm_module(b, m, input):
    # PyTorch's own rule (_BatchNorm.forward): batch statistics in training mode or without running stats.
    if not (m.training or (m.running_mean is None and m.running_var is None)):
        b.refuse(f"{type(m).__name__} is in eval mode with running statistics; kforge supports batch "
                 "statistics only for now (KernelBench leaves models in training mode)")
    return batch_norm(b, input, None, None, module_param(b, m, "weight"), module_param(b, m, "bias"), True,
                      eps=m.eps)


@on_module(nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)
def instance_norm_module(b, m, input):
    nd = {nn.InstanceNorm1d: 1, nn.InstanceNorm2d: 2, nn.InstanceNorm3d: 3}[type(m)]
    if tensor(b, input).ndim != nd + 2:
        b.refuse(f"unbatched input of shape {list(input.shape)} is not supported")
    if not (m.training or not m.track_running_stats):  # PyTorch's rule (_InstanceNorm.forward)
        b.refuse(f"{type(m).__name__} is in eval mode with running statistics; not supported yet")
    return instance_norm(b, input, None, None, module_param(b, m, "weight"), module_param(b, m, "bias"), True,
                         eps=m.eps)
