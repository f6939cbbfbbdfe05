"""Scans (cumsum, cumprod, cummax, cummin, logcumsumexp) and flip."""
import torch

from kforge.fx_ops.common import Multi, norm_dim, norm_dims, on, tensor, unary, varargs


def scan_handler(op):
    def handler(b, input, dim, *, dtype=None):
        x = tensor(b, input)
        return unary(b, op, x, {"dim": norm_dim(dim, x.ndim), "reverse": False})
    return handler


on(torch.cumsum, "cumsum")(scan_handler("cumsum"))
on(torch.cumprod, "cumprod")(scan_handler("cumprod"))
on(torch.logcumsumexp, "logcumsumexp")(scan_handler("logcumsumexp"))


def running_extreme(op):
    """torch.cummax / cummin give (values, indices): the values are a scan; where a model reads the indices, the
    problem is refused, naming them."""
    def handler(b, input, dim):
        def indices():
            b.refuse(f"torch.{op}'s indices are not supported (its values are)")
        return Multi(lambda: scan_handler(op)(b, input, dim), indices, fields=("values", "indices"))
    return handler


on(torch.cummax, "cummax")(running_extreme("cummax"))
on(torch.cummin, "cummin")(running_extreme("cummin"))


@on(torch.flip, "flip")
def flip(b, input, *dims_positional, dims=None):
    x = tensor(b, input)
    return b.emit("flip", [x], {"dims": norm_dims(varargs(dims_positional, dims), x.ndim)})
