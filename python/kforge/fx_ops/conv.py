"""Convolutions: nn.Conv1d/2d/3d and F.conv1d/2d/3d as the IR's `conv`, nn.ConvTranspose1d/2d/3d and
F.conv_transpose1d/2d/3d as `conv_transpose` (PyTorch's semantics; the lowering makes each a cuDNN step).
padding='valid' and 'same' become ints here; 'same' with an even dilated kernel extent needs asymmetric padding
(PyTorch pads the extra element on the right), which the IR does not hold: refused. Padding modes other than
'zeros' and a transposed convolution called with output_size are refused by name."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.dtypes import FLOATS
from kforge.fx_ops.common import half_storage, module_param, on, on_module, tensor
from kforge.fx_ops.pooling import ntuple


def conv_attrs(b, nd, x, w, stride, padding, dilation, groups) -> dict:
    if x.ndim != nd + 2:
        b.refuse(f"conv{nd}d input must be [N, C, {nd} spatial dims]; unbatched shape {list(x.shape)} is not supported")
    stride, dilation = ntuple(stride, nd), ntuple(dilation, nd)
    kernel = list(w.shape[2:])
    if padding == "valid":
        padding = [0] * nd
    elif padding == "same":
        span = [d * (k - 1) for d, k in zip(dilation, kernel)]
        if any(s % 2 for s in span):
            b.refuse(f"padding='same' with dilated kernel extents {[s + 1 for s in span]} needs asymmetric padding, "
                     "which is unsupported")
        padding = [s // 2 for s in span]
    else:
        padding = ntuple(padding, nd)
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": int(groups)}


def conv_handler(nd):
    def handler(b, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        x, w = tensor(b, input), tensor(b, weight, "conv weight")
        for v, what in ((x, "input"), (w, "weight")):
            if v.dtype not in FLOATS:
                b.refuse(f"convolutions are supported in float32, float16 and bfloat16, got a {v.dtype} {what}")
        args = [x, w] if bias is None else [x, w, tensor(b, bias, "conv bias")]
        return b.emit("conv", args, {**conv_attrs(b, nd, x, w, stride, padding, dilation, groups), **half_storage(x, w)})
    return handler


def conv_module(nd):
    def handler(b, m, input):
        if m.padding_mode != "zeros":
            b.refuse(f"{type(m).__name__} with padding_mode='{m.padding_mode}' is unsupported (only 'zeros')")
        weight = module_param(b, m, "weight")  # params are listed in first-use order: weight, then bias
        return conv_handler(nd)(b, input, weight, module_param(b, m, "bias"), m.stride, m.padding, m.dilation, m.groups)
    return handler


def conv_transpose_handler(nd):
    """F.conv_transpose{nd}d: note PyTorch's argument order, groups before dilation."""
    def handler(b, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        x, w = tensor(b, input), tensor(b, weight, "conv_transpose weight")
        for v, what in ((x, "input"), (w, "weight")):
            if v.dtype not in FLOATS:
                b.refuse(f"transposed convolutions are supported in float32, float16 and bfloat16, got a {v.dtype} {what}")
        if x.ndim != nd + 2:
            b.refuse(f"conv_transpose{nd}d input must be [N, C, {nd} spatial dims]; unbatched shape {list(x.shape)} "
                     "is not supported")
        args = [x, w] if bias is None else [x, w, tensor(b, bias, "conv_transpose bias")]
        return b.emit("conv_transpose", args, {"stride": ntuple(stride, nd), "padding": ntuple(padding, nd),
                                               "output_padding": ntuple(output_padding, nd),
                                               "dilation": ntuple(dilation, nd), "groups": int(groups)})
    return handler


def conv_transpose_module(nd):
    def handler(b, m, input, output_size=None):
        if output_size is not None:
            b.refuse(f"{type(m).__name__} called with output_size is unsupported (set output_padding instead)")
        if m.padding_mode != "zeros":
            b.refuse(f"{type(m).__name__} with padding_mode='{m.padding_mode}' is unsupported (only 'zeros')")
        weight = module_param(b, m, "weight")
        return conv_transpose_handler(nd)(b, input, weight, module_param(b, m, "bias"), m.stride, m.padding,
                                          m.output_padding, m.groups, m.dilation)
    return handler


for _nd, _fn, _cls, _tfn, _tcls in ((1, F.conv1d, nn.Conv1d, F.conv_transpose1d, nn.ConvTranspose1d),
                                     (2, F.conv2d, nn.Conv2d, F.conv_transpose2d, nn.ConvTranspose2d),
                                     (3, F.conv3d, nn.Conv3d, F.conv_transpose3d, nn.ConvTranspose3d)):
    on(_fn)(conv_handler(_nd))
    on_module(_cls)(conv_module(_nd))
    on(_tfn)(conv_transpose_handler(_nd))
    on_module(_tcls)(conv_transpose_module(_nd))
