"""Scans (cumsum, cumprod) and flip."""
import torch

from kforge.fx_ops.common import norm_dim, norm_dims, on, tensor, unary, varargs


def scan_handler(op):
    def handler(b, input, dim, *, dtype=None):
        x = tensor(b, input)
        return unary(b, op, x, {"dim": norm_dim(dim, x.ndim), "reverse": False})
    return handler


on(torch.cumsum, "cumsum")(scan_handler("cumsum"))
on(torch.cumprod, "cumprod")(scan_handler("cumprod"))


@on(torch.flip, "flip")
def flip(b, input, *dims_positional, dims=None):
    x = tensor(b, input)
    return b.emit("flip", [x], {"dims": norm_dims(varargs(dims_positional, dims), x.ndim)})
