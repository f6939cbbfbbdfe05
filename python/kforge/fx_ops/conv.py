"""Convolutions: nn.Conv1d/2d/3d and F.conv1d/2d/3d as the IR's `conv`, nn.ConvTranspose1d/2d/3d and
F.conv_transpose1d/2d/3d as `conv_transpose` (PyTorch's semantics; the lowering makes each a cuDNN step).
padding='valid' and 'same' become ints here; 'same' with an even dilated kernel extent needs asymmetric padding
(PyTorch pads the extra element on the right), which the IR's convolution does not hold: the input is padded first
(F.pad's composition), as are the inputs of convolutions whose padding mode is not 'zeros' (reflect, replicate,
circular: PyTorch's own Conv modules pad so). A transposed convolution called with output_size is refused by name."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge.dtypes import FLOATS
from kforge.fx_ops.common import half_storage, module_param, on, on_module, tensor
from kforge.fx_ops.compositions import padded_dims
from kforge.fx_ops.pooling import ntuple


def check_image(b, nd, x) -> None:
    if x.ndim != nd + 2:
        b.refuse(f"conv{nd}d input must be [N, C, {nd} spatial dims]; unbatched shape {list(x.shape)} is not supported")


def conv_attrs(b, nd, x, w, stride, padding, dilation, groups) -> dict:
    check_image(b, nd, x)
    stride, dilation = ntuple(stride, nd), ntuple(dilation, nd)
    kernel = list(w.shape[2:])
    if padding == "valid":
        padding = [0] * nd
    elif padding == "same":  # even spans only: conv_handler pads the input first where one is odd
        padding = [d * (k - 1) // 2 for d, k in zip(dilation, kernel)]
    else:
        padding = ntuple(padding, nd)
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": int(groups)}


def same_padding_pairs(nd, w, dilation) -> list[int] | None:
    """F.pad's pairs for padding='same' where some dilated kernel extent is even (the extra element on the right, as
    PyTorch pads it); None where every side is even."""
    dilation = ntuple(dilation, nd)
    span = [d * (k - 1) for d, k in zip(dilation, w.shape[2:])]
    if not any(s % 2 for s in span):
        return None
    return [p for s in reversed(span) for p in (s // 2, s - s // 2)]


def conv_handler(nd):
    def handler(b, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        x, w = tensor(b, input), tensor(b, weight, "conv weight")
        for v, what in ((x, "input"), (w, "weight")):
            if v.dtype not in FLOATS:
                b.refuse(f"convolutions are supported in float32, float16 and bfloat16, got a {v.dtype} {what}")
        if padding == "same" and x.ndim == nd + 2 and (pairs := same_padding_pairs(nd, w, dilation)) is not None:
            x, padding = padded_dims(b, x, pairs, "constant", 0.0), 0
        args = [x, w] if bias is None else [x, w, tensor(b, bias, "conv bias")]
        return b.emit("conv", args, {**conv_attrs(b, nd, x, w, stride, padding, dilation, groups), **half_storage(x, w)})
    return handler


def conv_module(nd):
    def handler(b, m, input):
        padding = m.padding
        if m.padding_mode != "zeros":  # as nn.Conv*d computes it: F.pad in the mode, then no padding
            x = tensor(b, input)
            check_image(b, nd, x)
            input, padding = padded_dims(b, x, m._reversed_padding_repeated_twice, m.padding_mode, 0.0), 0
        weight = module_param(b, m, "weight")  # params are listed in first-use order: weight, then bias
        return conv_handler(nd)(b, input, weight, module_param(b, m, "bias"), m.stride, padding, m.dilation, m.groups)
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
