"""Shape ops (reshape, permute, expand, contiguous) and picking parts of tuple results."""
import operator

import torch
import torch.nn as nn

from kforge.fx_ops.common import Multi, norm_dim, on, on_module, tensor, varargs
from kforge.graph_builder import Val


@on(operator.getitem)
def getitem(b, obj, index):
    if isinstance(obj, Multi):
        return obj.parts[index]()
    if isinstance(obj, Val):
        b.refuse("tensor indexing and slicing are not supported")
    b.refuse(f"indexing a {type(obj).__name__} is not supported")


@on(getattr)
def getattr_(b, obj, name, *default):
    if isinstance(obj, Multi) and name in obj.fields:
        return obj.parts[obj.fields.index(name)]()
    if isinstance(obj, Val) and name in ("T", "mT"):
        if obj.ndim < 2:
            return obj  # x.T of a vector is x
        dims = list(range(obj.ndim))
        return b.emit("permute", [obj], {"dims": dims[::-1] if name == "T" else dims[:-2] + [dims[-1], dims[-2]]})
    b.refuse(f"attribute .{name} is not supported")


@on("view", "reshape", torch.reshape, "view_as", "reshape_as", torch.flatten, "flatten", torch.squeeze,
    "squeeze", torch.unsqueeze, "unsqueeze", torch.unflatten, "unflatten")
def reshape(b, input, *args, **kwargs):
    """Every view becomes a reshape to the static shape PyTorch computed."""
    x = tensor(b, input)
    if b.out_dtype != x.dtype:
        b.refuse("viewing a tensor as another dtype is not supported")
    return b.emit("reshape", [x], {"shape": list(b.out_shape)})


on_module(nn.Flatten, nn.Unflatten)(lambda b, m, input: reshape(b, input))


@on(torch.permute, "permute")
def permute(b, input, *dims_positional, dims=None):
    x = tensor(b, input)
    return b.emit("permute", [x], {"dims": [norm_dim(d, x.ndim) for d in varargs(dims_positional, dims)]})


@on(torch.transpose, "transpose", torch.swapaxes, "swapaxes", torch.swapdims, "swapdims")
def transpose(b, input, dim0, dim1):
    x = tensor(b, input)
    perm = list(range(x.ndim))
    d0, d1 = norm_dim(dim0, x.ndim), norm_dim(dim1, x.ndim)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.emit("permute", [x], {"dims": perm})


on(torch.t, "t")(lambda b, input: getattr_(b, input, "T"))


@on("expand", "expand_as", torch.broadcast_to)
def expand(b, input, *args, **kwargs):
    return b.emit("expand", [tensor(b, input)], {"shape": list(b.out_shape)})


@on("contiguous")
def contiguous(b, input, memory_format=None):
    return b.emit("contiguous", [tensor(b, input)])
