"""Shape ops (reshape, permute, expand, contiguous, cat, stack, slicing, split, chunk, unbind) and picking parts of
tuple results."""
import operator

import torch
import torch.nn as nn

from kforge.fx_ops.common import Multi, norm_dim, on, on_module, tensor, varargs
from kforge.graph_builder import Val


@on(operator.getitem)
def getitem(b, obj, index):
    if isinstance(obj, Multi):
        if not isinstance(index, int):
            b.refuse("slicing a tuple of results is not supported (pick its parts one by one)")
        return obj.parts[index]()
    if isinstance(obj, Val):
        return index_with(b, obj, index)
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


def parts_of(b, tensors, what) -> list[Val]:
    """The tensors of a torch.cat or torch.stack, in PyTorch's promoted dtype (casts first)."""
    if not isinstance(tensors, (list, tuple)) or not tensors:
        b.refuse(f"{what} takes a non-empty list of tensors")
    parts = [tensor(b, t) for t in tensors]
    if any(0 in p.shape for p in parts):
        b.refuse(f"{what} of empty tensors is not supported")
    return [p if p.dtype == b.out_dtype else b.cast(p, b.out_dtype) for p in parts]


@on(torch.cat, torch.concat, torch.concatenate)
def cat(b, tensors, dim=0, axis=None):
    """torch.cat: the parts one after another along `dim`."""
    parts = parts_of(b, tensors, "torch.cat")
    d = norm_dim(dim if axis is None else axis, parts[0].ndim)
    return parts[0] if len(parts) == 1 else b.emit("cat", parts, {"dim": d})


@on(torch.stack)
def stack(b, tensors, dim=0):
    """torch.stack: each part given a new dim of 1 at `dim`, then concatenated along it."""
    parts = parts_of(b, tensors, "torch.stack")
    d = norm_dim(dim, parts[0].ndim + 1)
    shape = list(parts[0].shape)
    shape.insert(d, 1)
    grown = [b.emit_tmp("reshape", [p], {"shape": shape}, p.dtype, shape) for p in parts]
    return b.emit("cat", grown, {"dim": d}) if len(grown) > 1 else b.emit("reshape", [parts[0]], {"shape": shape})


def slice_of(b, x: Val, d: int, start, end, step: int = 1, node_value: bool = True) -> Val:
    """x[.., start:end:step, ..] along dim d with PyTorch's clamping of the bounds; the whole dim is x itself.
    Emitted as the FX node's own value where its shape is the node's (the last step of an index) and `node_value`,
    else a step (a composition's parts: compositions.py)."""
    if step < 1:
        b.refuse("slices with a negative or zero step are not supported")
    start, end, _ = slice(start, end, step).indices(x.shape[d])
    if start >= end:
        b.refuse("empty slices are not supported")
    if start == 0 and len(range(start, end, step)) == x.shape[d]:  # every element, in order (a dim of 1 included)
        return x
    shape = x.shape[:d] + ((end - start + step - 1) // step,) + x.shape[d + 1:]
    attrs = {"dim": d, "start": start, "end": end, "step": step}
    if node_value and tuple(shape) == tuple(b.out_shape):
        return b.emit("slice", [x], attrs)
    return b.emit_tmp("slice", [x], attrs, x.dtype, shape)


def index_with(b, x: Val, index) -> Val:
    """x[index] for an index of ints, slices, Ellipsis and None (basic indexing): a slice per dim taken, then one
    reshape to the shape PyTorch computed (an int drops its dim, None adds one)."""
    items = list(index) if isinstance(index, tuple) else [index]
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, (int, slice))) or isinstance(item, bool):
            b.refuse("indexing with tensors, lists or booleans (advanced indexing) is not supported")
        if isinstance(item, slice) and not all(v is None or isinstance(v, int) for v in (item.start, item.stop, item.step)):
            b.refuse("slice bounds must be Python ints")
    if items.count(Ellipsis) > 1:
        b.refuse("an index with two ellipses")
    dims_named = sum(1 for i in items if i is not None and i is not Ellipsis)
    if dims_named > x.ndim:
        b.refuse(f"an index of {dims_named} dims into a tensor of {x.ndim}")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (x.ndim - dims_named)
    items += [slice(None)] * (x.ndim - sum(1 for i in items if i is not None))
    d, v = 0, x
    for item in items:
        if item is None:
            continue
        if isinstance(item, int):
            i = item + x.shape[d] if item < 0 else item
            if not 0 <= i < x.shape[d]:
                b.refuse(f"index {item} is out of range for a dim of {x.shape[d]}")
            v = slice_of(b, v, d, i, i + 1)
        else:
            v = slice_of(b, v, d, item.start, item.stop, 1 if item.step is None else item.step)
        d += 1
    return v if tuple(v.shape) == tuple(b.out_shape) else b.emit("reshape", [v], {"shape": list(b.out_shape)})


@on(torch.narrow, "narrow")
def narrow(b, input, dim, start, length):
    x = tensor(b, input)
    d = norm_dim(dim, x.ndim)
    start = start + x.shape[d] if start < 0 else start
    return slice_of(b, x, d, start, start + length)


@on("unfold")
def unfold(b, input, dimension, size, step):
    """Tensor.unfold: the windows of `size` elements `step` apart along `dimension`, that dim becoming the windows'
    count and a last dim of `size` added. Windows that do not overlap (step = size: patches) are a reshape and a
    permute of the part they cover; overlapping ones a stack of `size` strided slices (window element j of every
    window is one slice), each read at its own positions where a kernel uses them."""
    x = tensor(b, input)
    d = norm_dim(dimension, max(x.ndim, 1))
    n = x.shape[d] if x.ndim else 1
    if not (1 <= size <= n) or step < 1:
        b.refuse(f"Tensor.unfold of a dim of {n} into windows of {size}, {step} apart (need 1 <= size <= {n}, step >= 1)")
    m = (n - size) // step + 1
    if step == size:
        covered = slice_of(b, x, d, 0, m * size)
        split = list(x.shape[:d]) + [m, size] + list(x.shape[d + 1:])
        v = b.emit_tmp("reshape", [covered], {"shape": split}, x.dtype, split)
        perm = [i for i in range(len(split)) if i != d + 1] + [d + 1]
        return b.emit("permute", [v], {"dims": perm})
    if size > 256:
        b.refuse(f"Tensor.unfold into overlapping windows of {size} elements (more than 256) is not supported")
    return stack(b, [slice_of(b, x, d, j, j + step * (m - 1) + 1, step) for j in range(size)], dim=x.ndim)


def split_parts(b, x: Val, d: int, bounds, drop_dim=False) -> Multi:
    """A tuple result of consecutive pieces of x along d, each emitted when a getitem picks it."""
    def part(start, end):
        def pick():
            v = slice_of(b, x, d, start, end)
            return b.emit("reshape", [v], {"shape": list(b.out_shape)}) if drop_dim else v
        return pick
    return Multi(*[part(s, e) for s, e in bounds])


def pieces_of(n: int, size: int) -> list[tuple[int, int]]:
    """[start, end) of consecutive pieces of `size` over n, the last one shorter where size does not divide n."""
    return [(s, min(s + size, n)) for s in range(0, n, size)]


@on(torch.split, "split")
def split(b, input, split_size_or_sections, dim=0):
    x = tensor(b, input)
    d = norm_dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        bounds = pieces_of(n, split_size_or_sections)
    else:
        edges = [0]
        for size in split_size_or_sections:
            edges.append(edges[-1] + size)
        bounds = list(zip(edges[:-1], edges[1:]))
    return split_parts(b, x, d, bounds)


@on(torch.chunk, "chunk")
def chunk(b, input, chunks, dim=0):
    x = tensor(b, input)
    d = norm_dim(dim, x.ndim)
    n = x.shape[d]
    return split_parts(b, x, d, pieces_of(n, -(-n // chunks)))  # PyTorch's: pieces of ceil(n / chunks)


@on(torch.unbind, "unbind")
def unbind(b, input, dim=0):
    x = tensor(b, input)
    d = norm_dim(dim, x.ndim)
    return split_parts(b, x, d, [(i, i + 1) for i in range(x.shape[d])], drop_dim=True)
