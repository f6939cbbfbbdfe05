"""einops' rearrange, repeat and reduce (functions and `einops.layers.torch` modules). einops itself turns the
pattern into its recipe (reshape, permute, reduce, new axes, reshape) for the input's shape; the recipe is applied
to the graph's values through a backend of einops' own interface whose operations emit IR nodes, so the graph
holds exactly the steps einops takes with PyTorch. The tracer keeps these calls whole (fx_to_ir.trace wraps the
einops module); a problem without einops installed never reaches here."""
import torch

from kforge.dtypes import FLOATS
from kforge.fx_ops.common import on, on_module, tensor

try:
    import einops
    from einops import einops as recipes
    from einops.layers import torch as layers
except ImportError:  # einops is optional: only problems that import it need it
    einops = None

# einops' reductions by their IR op (einops also has any / all, on booleans: refused below).
REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin", "prod": "prod"}


class GraphBackend:
    """The part of einops' backend interface its recipes use, on the bridge's values: each operation one IR node."""

    def __init__(self, b):
        self.b = b

    def shape(self, x):
        return tuple(x.shape)

    def is_float_type(self, x):
        return x.dtype in FLOATS

    def reshape(self, x, shape):
        shape = tuple(int(n) for n in shape)
        return x if shape == tuple(x.shape) else self.b.emit_tmp("reshape", [x], {"shape": list(shape)}, x.dtype, shape)

    def transpose(self, x, axes):
        shape = tuple(x.shape[a] for a in axes)
        return self.b.emit_tmp("permute", [x], {"dims": list(axes)}, x.dtype, shape)

    def reduce(self, x, operation, axes):
        if operation not in REDUCTIONS:
            self.b.refuse(f"einops reduction '{operation}' is not supported ({', '.join(REDUCTIONS)} are)")
        shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return self.b.emit_tmp(REDUCTIONS[operation], [x], {"dims": list(axes), "keepdim": False}, x.dtype, shape)

    def add_axes(self, x, n_axes, pos2len):
        """New axes at the positions given, each repeated to its length (PyTorch's unsqueeze then expand)."""
        shape, grown = list(x.shape), []
        kept = iter(shape)
        for pos in range(n_axes):
            grown.append(1 if pos in pos2len else next(kept))
        x = self.reshape(x, grown)
        full = [pos2len.get(pos, n) for pos, n in enumerate(grown)]
        return x if full == grown else self.b.emit_tmp("expand", [x], {"shape": full}, x.dtype, tuple(full))


def apply(b, input, pattern: str, operation, axes_lengths: dict):
    """einops' `operation` (rearrange, repeat, or a reduction's name) of `pattern` on `input`, as IR nodes; the
    last one renamed as the FX node (a reshape of the result onto itself where it is the input unchanged)."""
    x = tensor(b, input)
    if not isinstance(pattern, str):
        b.refuse("an einops pattern must be a string")
    if any(not isinstance(n, int) for n in axes_lengths.values()):
        b.refuse("einops axis lengths must be Python ints")
    try:
        recipe = recipes._prepare_transformation_recipe(pattern, operation, tuple(sorted(axes_lengths)), x.ndim)
        y = recipes._apply_recipe(GraphBackend(b), recipe, x, operation, tuple(sorted(axes_lengths.items())))
    except einops.EinopsError as e:
        b.refuse(f"einops: {e}")
    except (TypeError, AttributeError) as e:  # an einops whose internals differ from the version this was written for
        b.refuse(f"einops {einops.__version__}'s recipe API is not the one kforge knows: {type(e).__name__}: {e}")
    if tuple(y.shape) != tuple(b.out_shape):
        b.refuse(f"einops gave shape {list(y.shape)}, PyTorch {list(b.out_shape)} (an einops version kforge does not know?)")
    return b.emit("reshape", [y], {"shape": list(b.out_shape)})


if einops is not None:
    # Positional-only: an axis may be named `b` (its length a keyword), as the builder is.
    @on(einops.rearrange)
    def rearrange(b, tensor_, pattern, /, **axes_lengths):
        return apply(b, tensor_, pattern, "rearrange", axes_lengths)

    @on(einops.repeat)
    def repeat(b, tensor_, pattern, /, **axes_lengths):
        return apply(b, tensor_, pattern, "repeat", axes_lengths)

    @on(einops.reduce)
    def reduce(b, tensor_, pattern, reduction, /, **axes_lengths):
        if not isinstance(reduction, str):
            b.refuse("an einops reduction must be named (a callable is not supported)")
        return apply(b, tensor_, pattern, reduction, axes_lengths)

    on_module(layers.Rearrange)(lambda b, m, input: apply(b, input, m.pattern, "rearrange", dict(m.axes_lengths)))
    on_module(layers.Reduce)(lambda b, m, input: apply(b, input, m.pattern, m.reduction, dict(m.axes_lengths)))

    # For the tracer: calls into these stay whole (autowrapped functions, leaf modules).
    WRAPPED_MODULES, LEAF_LAYERS = (einops,), (layers.Rearrange, layers.Reduce)
else:
    WRAPPED_MODULES, LEAF_LAYERS = (), ()

