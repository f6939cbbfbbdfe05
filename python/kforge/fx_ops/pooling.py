"""Max and average pooling over 1, 2 or 3 spatial dims, adaptive pooling among them."""
import torch.nn as nn
import torch.nn.functional as F

from kforge.fx_ops.common import Multi, on, on_module, tensor
from kforge.graph_builder import Val


def ntuple(v, nd) -> list[int]:
    """PyTorch takes one int, or a 1-element sequence, for every spatial dim."""
    v = [v] if isinstance(v, int) else list(v)
    return v * nd if len(v) == 1 else v


def pool_geometry(b, nd, x: Val, kernel_size, stride, padding) -> dict:
    if x.ndim != nd + 2:
        b.refuse(f"pooling input must be [N, C, {nd} spatial dims]; unbatched shape {list(x.shape)} is not supported")
    kernel = ntuple(kernel_size, nd)
    no_stride = stride is None or (not isinstance(stride, int) and len(stride) == 0)  # ATen's default is []
    stride = kernel if no_stride else ntuple(stride, nd)
    return {"nd": nd, "kernel": kernel, "stride": stride, "padding": ntuple(padding, nd)}


def max_pool_handler(nd):
    def handler(b, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        x = tensor(b, input)
        attrs = pool_geometry(b, nd, x, kernel_size, stride, padding)
        attrs["dilation"] = ntuple(dilation, nd)
        attrs["ceil_mode"] = bool(ceil_mode)
        if return_indices:  # (values, indices): the values where only they are read
            return Multi(lambda: b.emit("max_pool", [x], attrs),
                         lambda: b.refuse("max pooling's indices are not supported (its values are)"))
        return b.emit("max_pool", [x], attrs)
    return handler


def avg_pool_handler(nd):
    def handler(b, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
        if divisor_override is not None:
            b.refuse("average pooling with divisor_override is not supported")
        x = tensor(b, input)
        attrs = pool_geometry(b, nd, x, kernel_size, stride, padding)
        attrs["count_include_pad"] = bool(count_include_pad)
        attrs["ceil_mode"] = bool(ceil_mode)
        return b.emit("avg_pool", [x], attrs)
    return handler


for _nd, _max_fn, _avg_fn, _max_cls, _avg_cls in (
        (1, F.max_pool1d, F.avg_pool1d, nn.MaxPool1d, nn.AvgPool1d),
        (2, F.max_pool2d, F.avg_pool2d, nn.MaxPool2d, nn.AvgPool2d),
        (3, F.max_pool3d, F.avg_pool3d, nn.MaxPool3d, nn.AvgPool3d)):
    on(_max_fn)(max_pool_handler(_nd))
    # F.max_pool*d(..., return_indices=True) dispatches here: (values, indices) whatever the flag says.
    on(getattr(F, f"max_pool{_nd}d_with_indices"))(
        lambda b, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True, _nd=_nd:
        max_pool_handler(_nd)(b, input, kernel_size, stride, padding, dilation, ceil_mode, True))
    on(_avg_fn)(avg_pool_handler(_nd))
    on_module(_max_cls)(lambda b, m, input, _nd=_nd: max_pool_handler(_nd)(
        b, input, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode, m.return_indices))
    on_module(_avg_cls)(lambda b, m, input, _nd=_nd: avg_pool_handler(_nd)(
        b, input, m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad,
        getattr(m, "divisor_override", None)))  # AvgPool1d has no divisor_override


def adaptive_attrs(b, nd, x: Val, output_size) -> dict:
    """Adaptive pooling's attrs (ir/pool.h): PyTorch's window i of a dim of n into m spans [floor(i * n / m),
    ceil((i + 1) * n / m)). Where every dim's windows are of one width (m divides n: global pooling, m = 1,
    included) it is a fixed pooling with kernel = stride = n / m; otherwise the adaptive form, whose windows the
    kernels compute from the output index."""
    if x.ndim != nd + 2:
        b.refuse(f"adaptive pooling input must be [N, C, {nd} spatial dims]; unbatched shape {list(x.shape)} is not supported")
    sizes = [output_size] * nd if isinstance(output_size, int) else list(output_size)
    if len(sizes) == 1 and nd > 1:
        sizes = sizes * nd
    sizes = [n if m is None else m for n, m in zip(x.shape[2:], sizes)]  # None keeps the input's size
    for d, (n, m) in enumerate(zip(x.shape[2:], sizes)):
        if m <= 0:
            b.refuse(f"adaptive pooling of a dim of {n} into {m} (spatial dim {d})")
    if all(n % m == 0 for n, m in zip(x.shape[2:], sizes)):
        kernel = [n // m for n, m in zip(x.shape[2:], sizes)]
        return {"nd": nd, "kernel": kernel, "stride": kernel, "padding": [0] * nd}
    return {"nd": nd, "adaptive": True, "output": sizes}


def adaptive_avg_pool_handler(nd):
    def handler(b, input, output_size):
        x = tensor(b, input)
        return b.emit("avg_pool", [x], {**adaptive_attrs(b, nd, x, output_size), "count_include_pad": True})
    return handler


def adaptive_max_pool_handler(nd):
    def handler(b, input, output_size, return_indices=False):
        if return_indices:
            b.refuse("adaptive max pooling with return_indices=True is not supported")
        x = tensor(b, input)
        return b.emit("max_pool", [x], adaptive_attrs(b, nd, x, output_size))
    return handler


for _nd, _avg_fn, _max_fn, _avg_cls, _max_cls in (
        (1, F.adaptive_avg_pool1d, F.adaptive_max_pool1d, nn.AdaptiveAvgPool1d, nn.AdaptiveMaxPool1d),
        (2, F.adaptive_avg_pool2d, F.adaptive_max_pool2d, nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d),
        (3, F.adaptive_avg_pool3d, F.adaptive_max_pool3d, nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool3d)):
    on(_avg_fn)(adaptive_avg_pool_handler(_nd))
    on(_max_fn)(adaptive_max_pool_handler(_nd))
    on_module(_avg_cls)(lambda b, m, input, _nd=_nd: adaptive_avg_pool_handler(_nd)(b, input, m.output_size))
    on_module(_max_cls)(lambda b, m, input, _nd=_nd: adaptive_max_pool_handler(_nd)(
        b, input, m.output_size, m.return_indices))
