"""The op catalogue of kforge.synth: one sampler per op family that picks an op and its parameters valid for the
tensor at hand, the chain sampler that threads the shape through 1-5 of them, and the writer of the
KernelBench-format file.

Every op is written the way KernelBench files write it (nn modules, torch.* and F.* calls) and uses only ops
that docs/interfaces.md lists, so the bridge can import it. Samplers draw from a `random.Random` only, so one
seed gives one file, byte for byte.
"""
import keyword
import math
import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class State:
    """What the next op may assume about the tensor it gets. `value` keeps ops that need a value range safe:
    log/sqrt only see "positive" values, cumprod only "near_one" ones (a product of thousands of arbitrary
    values overflows), and every other value is "any"."""
    shape: tuple
    value: str = "any"
    dtype: str = "f32"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def positive(self) -> bool:
        return self.value in ("positive", "near_one")


@dataclass
class Op:
    """One step of a chain. `forward` is an expression template over `{x}` (the current tensor) and the names of
    params, extra inputs and `{mod}`; `init` builds a submodule from params (then forward calls it), otherwise
    every param is stored on self. Params become module-level constants passed through get_init_inputs();
    `sizes` are module-level constants that only get_inputs() uses (a loss target's shape)."""
    kind: str
    forward: str
    out: State
    params: dict = field(default_factory=dict)
    init: str | None = None
    module: str = "mod"
    inputs: tuple = ()  # (name, get_inputs() expression template) of extra forward arguments, e.g. a target
    sizes: dict = field(default_factory=dict)
    terminal: bool = False  # a loss or an arg-reduction: nothing follows it

    @property
    def label(self) -> str:
        return f"{self.kind}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"


def rounded(rng, lo, hi, digits=2) -> float:
    return round(rng.uniform(lo, hi), digits)


def signed(rng, lo, hi) -> float:
    return rounded(rng, lo, hi) * rng.choice((-1, 1))


def pick_dim(rng, shape):
    """A dim of size > 1 (reducing or normalising a size-1 dim gives a trivial output), written as PyTorch
    users do: sometimes negative."""
    dims = [i for i, s in enumerate(shape) if s > 1]
    if not dims:
        return None
    d = rng.choice(dims)
    return d - len(shape) if rng.random() < 0.3 else d


def same(s: State, positive_kept=True) -> State:
    return State(s.shape, "positive" if positive_kept and s.positive else "any", s.dtype)


# ---- elementwise ---------------------------------------------------------------------------------------------

def simple(kind, expr, out_positive=None):
    """A parameterless activation; out_positive: True (always > 0), None (keeps the input's sign), False."""
    def build(rng, s):
        out = State(s.shape, "positive") if out_positive else same(s, out_positive is None)
        return Op(kind, expr, out)
    return build


def fn_or_module(rng, kind, fn, module, out, params):
    """The same op as an F.* call on self-stored params or as an nn module, as KernelBench files mix both."""
    if rng.random() < 0.5:
        return Op(kind, fn, out, params)
    return Op(kind, "self.{mod}({x})", out, params, init=module, module="act")


def leaky_relu(rng, s):
    return fn_or_module(rng, "leaky_relu", "F.leaky_relu({x}, negative_slope=self.{negative_slope})",
                        "nn.LeakyReLU(negative_slope={negative_slope})", same(s),
                        {"negative_slope": rounded(rng, 0.01, 0.3)})


def elu(rng, s):
    return fn_or_module(rng, "elu", "F.elu({x}, alpha=self.{alpha})", "nn.ELU(alpha={alpha})", same(s),
                        {"alpha": rounded(rng, 0.5, 2.0)})


def hardtanh(rng, s):
    return fn_or_module(rng, "hardtanh", "F.hardtanh({x}, min_val=self.{min_val}, max_val=self.{max_val})",
                        "nn.Hardtanh(min_val={min_val}, max_val={max_val})", same(s, False),
                        {"min_val": rounded(rng, -2.0, -0.25), "max_val": rounded(rng, 0.25, 2.0)})


def softplus(rng, s):
    return fn_or_module(rng, "softplus", "F.softplus({x}, beta=self.{beta}, threshold=self.{threshold})",
                        "nn.Softplus(beta={beta}, threshold={threshold})", State(s.shape, "positive"),
                        {"beta": rounded(rng, 0.5, 3.0, 1), "threshold": rng.choice((10.0, 20.0))})


def gelu(rng, s):
    return fn_or_module(rng, "gelu", "F.gelu({x}, approximate=self.{approximate})",
                        "nn.GELU(approximate={approximate})", same(s), {"approximate": rng.choice(("none", "tanh"))})


def clamp(rng, s):
    return Op("clamp", "torch.clamp({x}, min=self.{clamp_min}, max=self.{clamp_max})", same(s, False),
              {"clamp_min": rounded(rng, -2.0, -0.1), "clamp_max": rounded(rng, 0.1, 2.0)})


def add_scalar(rng, s):
    shift = signed(rng, 0.1, 2.0)
    return Op("add_scalar", "{x} + self.{shift}", same(s, shift > 0), {"shift": shift})


def mul_scalar(rng, s):
    scale = signed(rng, 0.25, 4.0)
    return Op("mul_scalar", "{x} * self.{scale}", same(s, scale > 0), {"scale": scale})


ELEMENTWISE = {
    "relu": simple("relu", "torch.relu({x})"), "sigmoid": simple("sigmoid", "torch.sigmoid({x})", True),
    "tanh": simple("tanh", "torch.tanh({x})"), "silu": simple("silu", "F.silu({x})"),
    "mish": simple("mish", "F.mish({x})"), "selu": simple("selu", "torch.selu({x})"),
    "softsign": simple("softsign", "F.softsign({x})"),
    "hardsigmoid": simple("hardsigmoid", "F.hardsigmoid({x})", False),
    "hardswish": simple("hardswish", "F.hardswish({x})", False),
    "gelu": gelu, "leaky_relu": leaky_relu, "elu": elu, "hardtanh": hardtanh, "softplus": softplus, "clamp": clamp,
    "add_scalar": add_scalar, "mul_scalar": mul_scalar,
}
NEEDS_POSITIVE = {"log": simple("log", "torch.log({x})", False), "sqrt": simple("sqrt", "torch.sqrt({x})", True)}


def elementwise(rng, s):
    table = {**ELEMENTWISE, **NEEDS_POSITIVE} if s.positive else ELEMENTWISE
    return table[rng.choice(sorted(table))](rng, s)


# ---- reductions, softmax -------------------------------------------------------------------------------------

def reduced(shape, dim, keepdim) -> tuple:
    d = dim % len(shape)
    return tuple(1 if i == d else n for i, n in enumerate(shape) if keepdim or i != d)


def reduction(rng, s):
    dim = pick_dim(rng, s.shape) if s.rank >= 2 else None  # rank >= 2 keeps the output a tensor, not a scalar
    if dim is None:
        return None
    kind = rng.choice(("sum", "mean", "amax", "amin"))
    keepdim = rng.random() < 0.5
    value = s.value if kind != "sum" else ("positive" if s.positive else "any")
    return Op(kind, f"torch.{kind}({{x}}, dim=self.{{dim}}, keepdim=self.{{keepdim}})",
              State(reduced(s.shape, dim, keepdim), value), {"dim": dim, "keepdim": keepdim})


def arg_reduction(rng, s):
    dim = pick_dim(rng, s.shape) if s.rank >= 2 else None
    if dim is None:
        return None
    kind = rng.choice(("argmax", "argmin"))
    keepdim = rng.random() < 0.5
    return Op(kind, f"torch.{kind}({{x}}, dim=self.{{dim}}, keepdim=self.{{keepdim}})",
              State(reduced(s.shape, dim, keepdim), "any", "i64"), {"dim": dim, "keepdim": keepdim}, terminal=True)


def softmax(rng, s):
    dim = pick_dim(rng, s.shape)
    if dim is None:
        return None
    kind = rng.choice(("softmax", "log_softmax"))
    out = State(s.shape, "positive" if kind == "softmax" else "any")
    if rng.random() < 0.5:
        return Op(kind, f"torch.{kind}({{x}}, dim=self.{{dim}})", out, {"dim": dim})
    cls = "nn.Softmax" if kind == "softmax" else "nn.LogSoftmax"
    return Op(kind, "self.{mod}({x})", out, {"dim": dim}, init=cls + "(dim={dim})", module=kind)


# ---- norms ---------------------------------------------------------------------------------------------------

def layer_norm(rng, s):
    k = rng.choice([k for k in (1, 2) if k < s.rank] or [0])
    if k == 0 or math.prod(s.shape[-k:]) < 2:
        return None
    shape = s.shape[-1] if k == 1 else tuple(s.shape[-k:])
    return Op("layer_norm", "self.{mod}({x})", State(s.shape),
              {"normalized_shape": shape, "eps": rng.choice((1e-5, 1e-6)), "elementwise_affine": rng.random() < 0.7},
              init="nn.LayerNorm({normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine})",
              module="norm")


def batch_norm(rng, s):
    # Training mode (KernelBench leaves models there) normalises with batch statistics, which need more than one
    # value per channel.
    if not 2 <= s.rank <= 5 or math.prod(s.shape) // s.shape[1] < 2:
        return None
    nd = max(1, s.rank - 2)
    return Op("batch_norm", "self.{mod}({x})", State(s.shape),
              {"num_features": s.shape[1], "eps": rng.choice((1e-5, 1e-3)), "affine": rng.random() < 0.7},
              init=f"nn.BatchNorm{nd}d({{num_features}}, eps={{eps}}, affine={{affine}})", module="bn")


def group_norm(rng, s):
    if s.rank < 3:
        return None
    channels, spatial = s.shape[1], math.prod(s.shape[2:])
    groups = [g for g in range(2, channels + 1) if channels % g == 0 and channels // g * spatial > 1]
    groups = groups or ([1] if channels * spatial > 1 else [])
    if not groups:
        return None
    return Op("group_norm", "self.{mod}({x})", State(s.shape),
              {"num_groups": rng.choice(groups), "num_channels": channels, "eps": 1e-5, "affine": rng.random() < 0.7},
              init="nn.GroupNorm({num_groups}, {num_channels}, eps={eps}, affine={affine})", module="gn")


def instance_norm(rng, s):
    if not 3 <= s.rank <= 5 or math.prod(s.shape[2:]) < 2:
        return None
    return Op("instance_norm", "self.{mod}({x})", State(s.shape),
              {"num_features": s.shape[1], "eps": 1e-5, "affine": rng.random() < 0.3},
              init=f"nn.InstanceNorm{s.rank - 2}d({{num_features}}, eps={{eps}}, affine={{affine}})", module="inorm")


def rms_norm(rng, s):
    """Written with primitives, as KernelBench's RMS problems are (the bridge sees mean, pow, rsqrt, mul)."""
    dim = pick_dim(rng, s.shape) if s.rank >= 2 else None
    if dim is None:
        return None
    return Op("rms_norm", "{x} * torch.rsqrt(torch.mean({x} ** 2, dim=self.{dim}, keepdim=True) + self.{eps})",
              State(s.shape), {"dim": dim, "eps": rng.choice((1e-5, 1e-6))})


def lp_normalize(rng, s):
    dim = pick_dim(rng, s.shape)
    if dim is None:
        return None
    p = rng.choice((1.0, 2.0))
    out = same(s)
    if rng.random() < 0.6:
        return Op("lp_normalize", "F.normalize({x}, p=self.{p}, dim=self.{dim})", out, {"p": p, "dim": dim})
    # The explicit forms of bench/level1/31-32; no eps, so a row of zeros would give NaN (the filters catch it).
    norm = "torch.sum(torch.abs({x})" if p == 1.0 else "torch.norm({x}, p=2"
    return Op(f"l{int(p)}_normalize", f"{{x}} / {norm}, dim=self.{{dim}}, keepdim=True)", out, {"dim": dim})


NORMS = (layer_norm, batch_norm, group_norm, instance_norm, rms_norm, lp_normalize)


def norm(rng, s):
    for build in rng.sample(NORMS, len(NORMS)):
        op = build(rng, s)
        if op:
            return op
    return None


# ---- scans, pooling ------------------------------------------------------------------------------------------

def scan(rng, s):
    dim = pick_dim(rng, s.shape)
    if dim is None:
        return None
    # cumprod stays finite only on values near 1; its result is no longer near 1 enough for a second cumprod.
    kind = "cumprod" if s.value == "near_one" and rng.random() < 0.7 else "cumsum"
    out = State(s.shape, "positive" if s.positive else "any")
    if rng.random() < 0.3:  # the reverse (suffix) scan, written with flip as KernelBench writes it
        return Op(f"reverse_{kind}", f"torch.{kind}({{x}}.flip(self.{{dim}}), self.{{dim}}).flip(self.{{dim}})",
                  out, {"dim": dim})
    return Op(kind, f"torch.{kind}({{x}}, dim=self.{{dim}})", out, {"dim": dim})


def pool(rng, s):
    """Max or average pooling over the [N, C, *spatial] layout with a kernel, stride and padding PyTorch accepts
    (padding at most half the kernel) and an output of at least one element per spatial dim."""
    if not 3 <= s.rank <= 5:
        return None
    nd, spatial = s.rank - 2, s.shape[2:]
    kernels = [k for k in (2, 3, 4, 5) if k <= min(spatial)]
    if not kernels:
        return None
    k = rng.choice(kernels)
    stride = rng.choice(sorted({1, 2, k}))
    padding = rng.randint(0, k // 2)
    kind = rng.choice(("max_pool", "avg_pool"))
    dilation = 2 if kind == "max_pool" and rng.random() < 0.25 else 1
    out = tuple((n + 2 * padding - dilation * (k - 1) - 1) // stride + 1 for n in spatial)
    if min(out) < 1:
        return None
    params = {"kernel_size": k, "stride": stride, "padding": padding}
    if kind == "max_pool":
        params["dilation"] = dilation
        value = s.value
    else:
        params["count_include_pad"] = rng.random() < 0.5
        value = "positive" if s.positive else "any"
    state = State(s.shape[:2] + out, value)
    args = ", ".join(f"{p}={{{p}}}" for p in params)
    if rng.random() < 0.7:
        cls = ("nn.MaxPool" if kind == "max_pool" else "nn.AvgPool") + f"{nd}d"
        return Op(kind, "self.{mod}({x})", state, params, init=f"{cls}({args})", module="pool")
    fn = f"F.{kind}{nd}d"
    self_args = ", ".join(f"{p}=self.{{{p}}}" for p in params)
    return Op(kind, f"{fn}({{x}}, {self_args})", state, params)


# ---- products: the library and tensor-core decisions (cuBLASLt, kforge's mma kernel, cuDNN) ------------------

def linear(rng, s):
    """nn.Linear over the last dim (any rank >= 2) to a width near the input's (the element count at most
    doubles)."""
    if s.rank < 2 or not 8 <= s.shape[-1] <= 4096:
        return None
    out_features = max(8, nice(rng, round(s.shape[-1] * rng.uniform(0.5, 2.0))))
    return Op("linear", "self.{mod}({x})", State(s.shape[:-1] + (out_features,)),
              {"in_features": s.shape[-1], "out_features": out_features, "bias": rng.random() < 0.7},
              init="nn.Linear({in_features}, {out_features}, bias={bias})", module="linear")


def conv(rng, s):
    """nn.Conv{1,2,3}d over [N, C, *spatial], size-preserving (odd kernel, padding k // 2), with few enough
    multiply-adds per output (C_in * k^nd <= 2048) that a 16M-element chain stays within the eager time range."""
    if not 3 <= s.rank <= 5 or not 2 <= s.shape[1] <= 512:
        return None
    nd = s.rank - 2
    kernels = [k for k in (1, 3, 5) if k <= min(s.shape[2:]) and s.shape[1] * k ** nd <= 2048]
    if not kernels:
        return None
    k = rng.choice(kernels)
    out_channels = max(2, nice(rng, round(s.shape[1] * rng.uniform(0.5, 2.0))))
    return Op("conv", "self.{mod}({x})", State(s.shape[:1] + (out_channels,) + s.shape[2:]),
              {"in_channels": s.shape[1], "out_channels": out_channels, "kernel_size": k, "padding": k // 2},
              init=f"nn.Conv{nd}d({{in_channels}}, {{out_channels}}, {{kernel_size}}, padding={{padding}})", module="conv")


# ---- losses (end a chain) ------------------------------------------------------------------------------------

def flattened(s) -> tuple[str, tuple]:
    """Losses over [N, C] rows take the chain's tensor with leading dims folded into N."""
    if s.rank == 2:
        return "{x}", s.shape
    return "torch.flatten({x}, 0, -2)", (math.prod(s.shape[:-1]), s.shape[-1])


def loss(rng, s):
    builders = [pointwise_loss, hinge_loss]
    if s.rank >= 1 and s.shape[-1] > 1:
        builders.append(kl_div_loss)
    if s.rank >= 2 and s.shape[-1] > 1:
        builders += [cross_entropy_loss, triplet_loss, cosine_loss]
    return rng.choice(builders)(rng, s)


SCALAR = State(())
RANDN_TARGET = (("target", "torch.randn(*{target_shape})"),)


def pointwise_loss(rng, s):
    kind = rng.choice(("mse_loss", "huber_loss", "smooth_l1_loss"))
    params = {"reduction": rng.choice(("mean", "sum"))}
    extra = {"huber_loss": "delta", "smooth_l1_loss": "beta"}.get(kind)
    if extra:
        params[extra] = rounded(rng, 0.5, 2.0)
    args = "".join(f", {p}=self.{{{p}}}" for p in params)
    return Op(kind, f"F.{kind}({{x}}, {{target}}{args})", SCALAR, params, inputs=RANDN_TARGET,
              sizes={"target_shape": s.shape}, terminal=True)


def kl_div_loss(rng, s):
    """KL divergence between the chain's row distribution (as log-probabilities) and a softmaxed target."""
    return Op("kl_div", "F.kl_div(F.log_softmax({x}, dim=-1), {target}, reduction=self.{reduction})", SCALAR,
              {"reduction": rng.choice(("batchmean", "sum", "mean"))},
              inputs=(("target", "torch.softmax(torch.randn(*{target_shape}), dim=-1)"),),
              sizes={"target_shape": s.shape}, terminal=True)


def cross_entropy_loss(rng, s):
    logits, (rows, classes) = flattened(s)
    return Op("cross_entropy", f"F.cross_entropy({logits}, {{target}}, reduction=self.{{reduction}})", SCALAR,
              {"reduction": rng.choice(("mean", "sum"))},
              inputs=(("target", "torch.randint(0, {classes}, ({rows},))"),),
              sizes={"rows": rows, "classes": classes}, terminal=True)


def hinge_loss(rng, s):
    """Written with primitives, as the interface says (labels in {-1, 1})."""
    return Op("hinge_loss", "torch.mean(torch.clamp(1 - {x} * {target}, min=0))", SCALAR,
              inputs=(("target", "torch.randint(0, 2, {target_shape}).float() * 2 - 1"),),
              sizes={"target_shape": s.shape}, terminal=True)


def triplet_loss(rng, s):
    anchor, shape = flattened(s)
    extra = (("positive", "torch.randn(*{embedding_shape})"), ("negative", "torch.randn(*{embedding_shape})"))
    params = {"margin": rounded(rng, 0.5, 2.0)}
    if rng.random() < 0.5:
        return Op("triplet_margin_loss", f"self.{{mod}}({anchor}, {{positive}}, {{negative}})", SCALAR, params,
                  init="nn.TripletMarginLoss(margin={margin})", module="loss", inputs=extra,
                  sizes={"embedding_shape": shape}, terminal=True)
    return Op("triplet_margin_loss",
              f"F.triplet_margin_loss({anchor}, {{positive}}, {{negative}}, margin=self.{{margin}})", SCALAR,
              params, inputs=extra, sizes={"embedding_shape": shape}, terminal=True)


def cosine_loss(rng, s):
    return Op("cosine_loss", "torch.mean(1 - F.cosine_similarity({x}, {target}, dim=self.{dim}))", SCALAR,
              {"dim": pick_dim(rng, s.shape)}, inputs=RANDN_TARGET, sizes={"target_shape": s.shape}, terminal=True)


# ---- chains and shapes ---------------------------------------------------------------------------------------

# (family, weight, sampler, ends the chain). A terminal family is drawn only for the last op.
FAMILIES = (
    ("elementwise", 4.0, elementwise, False), ("reduction", 1.0, reduction, False), ("softmax", 1.0, softmax, False),
    ("norm", 2.0, norm, False), ("scan", 1.0, scan, False), ("pool", 1.5, pool, False),
    ("linear", 1.0, linear, False), ("conv", 0.7, conv, False),
    ("loss", 2.5, loss, True), ("arg_reduction", 0.5, arg_reduction, True),
)
LENGTHS, LENGTH_WEIGHTS = (1, 2, 3, 4, 5), (1.0, 2.0, 2.0, 1.5, 1.0)
RANKS, RANK_WEIGHTS = (2, 3, 4, 5), (3.0, 3.0, 3.0, 1.0)
INPUT_KINDS = {  # what get_inputs() draws; "positive" lets log/sqrt appear, "near_one" lets cumprod appear
    "any": ("torch.randn({dims})", 0.65), "positive": ("torch.rand({dims}) + 0.1", 0.2),
    "near_one": ("1.0 + 0.002 * torch.randn({dims})", 0.15),
}
DIM_NAMES = {2: ("BATCH", "FEATURES"), 3: ("BATCH", "CHANNELS", "LENGTH"),
             4: ("BATCH", "CHANNELS", "HEIGHT", "WIDTH"), 5: ("BATCH", "CHANNELS", "DEPTH", "HEIGHT", "WIDTH")}


def sample_op(rng, state, last):
    """An op of a family drawn by weight among those that fit the state (elementwise always fits a float)."""
    families = [f for f in FAMILIES if last or not f[3]]
    while families:
        family = rng.choices(families, [f[1] for f in families])[0]
        op = family[2](rng, state) if state.dtype == "f32" else None
        if op:
            return op
        families.remove(family)
    return None


def sample_chain(rng, state, length) -> list[Op]:
    ops = []
    for i in range(length):
        op = sample_op(rng, state, i == length - 1)
        if op is None:
            break
        ops.append(op)
        state = op.out
        if op.terminal:
            break
    return ops


def nice(rng, n) -> int:
    """Some sizes odd (the awkward case for kernels), some multiples of 8 or 16, the rest as drawn."""
    r = rng.random()
    if r < 0.35:
        return n | 1
    if r < 0.6 and n >= 16:
        step = 16 if n >= 64 else 8
        return max(step, round(n / step) * step)
    return n


def sample_shape(rng, min_elems, max_elems) -> tuple:
    """A shape whose element count lies in [min_elems, max_elems] (log-uniform), split unevenly over the dims;
    the batch dim of ranks >= 3 gets a smaller share, as in KernelBench."""
    rank = rng.choices(RANKS, RANK_WEIGHTS)[0]
    for _ in range(100):
        total = math.exp(rng.uniform(math.log(min_elems), math.log(max_elems)))
        shares = [rng.uniform(0.2, 0.6) if i == 0 and rank >= 3 else rng.uniform(0.6, 1.4) for i in range(rank)]
        dims = tuple(max(2, nice(rng, round(total ** (w / sum(shares))))) for w in shares)
        if min_elems <= math.prod(dims) <= max_elems:
            return dims
    return (2,) * (rank - 1) + (max(2, -(-min_elems // 2 ** (rank - 1))),)  # a tight range: still in it


@dataclass
class Spec:
    """A sampled problem: the input's shape and value range and the chain applied to it."""
    shape: tuple
    value: str
    ops: list

    @property
    def label(self) -> str:
        return " -> ".join(op.label for op in self.ops)

    def slug(self) -> str:
        return "_".join(op.kind for op in self.ops)

    def render(self) -> str:
        return render(self)


def sample_problem(rng: random.Random, min_elems: int, max_elems: int) -> Spec:
    shape = sample_shape(rng, min_elems, max_elems)
    kinds = list(INPUT_KINDS)
    value = rng.choices(kinds, [INPUT_KINDS[k][1] for k in kinds])[0]
    length = rng.choices(LENGTHS, LENGTH_WEIGHTS)[0]
    return Spec(shape, value, sample_chain(rng, State(shape, value), length))


# ---- the file ------------------------------------------------------------------------------------------------

class Names:
    """Unique identifiers: the second `dim` of a chain becomes `dim_2`. Lower-case names are init arguments,
    self attributes and forward arguments; their upper-case forms are the module-level constants."""

    def __init__(self, reserved):
        self.used = set(reserved) | set(keyword.kwlist)

    def take(self, base: str) -> str:
        name, i = base, 2
        while name in self.used:
            name, i = f"{base}_{i}", i + 1
        self.used.add(name)
        return name


def render(spec: Spec) -> str:
    dims = DIM_NAMES[len(spec.shape)]
    names = Names({"x", "self", "torch", "nn", "F", "super", "mod"} | {d.lower() for d in dims})
    consts = list(zip(dims, spec.shape))
    init_args, init_lines, forward_lines = [], [], []
    extra_inputs = []  # (name, expression)
    for i, op in enumerate(spec.ops):
        m = {"x": "x"}
        for p, v in op.params.items():
            m[p] = names.take(p)
            init_args.append(m[p])
            consts.append((m[p].upper(), v))
        for s, v in op.sizes.items():
            m[s] = names.take(s).upper()
            consts.append((m[s], v))
        for name, _ in op.inputs:
            m[name] = names.take(name)
        if op.init:
            m["mod"] = names.take(op.module)
            init_lines.append(f"self.{m['mod']} = {op.init.format(**m)}")
        else:
            init_lines += [f"self.{m[p]} = {m[p]}" for p in op.params]
        extra_inputs += [(m[name], expr.format(**m)) for name, expr in op.inputs]
        expr = op.forward.format(**m)
        forward_lines.append(f"return {expr}" if i == len(spec.ops) - 1 else f"x = {expr}")
    x_expr = INPUT_KINDS[spec.value][0].format(dims=", ".join(dims))
    if extra_inputs:
        get_inputs = [f"x = {x_expr}"] + [f"{n} = {e}" for n, e in extra_inputs]
        get_inputs.append(f"return [x, {', '.join(n for n, _ in extra_inputs)}]")
    else:
        get_inputs = [f"return [{x_expr}]"]
    indent = "\n        "
    return "\n".join([
        f'"""Synthetic chain on a {list(spec.shape)} input: {spec.label}."""',
        "import torch",
        "import torch.nn as nn",
        "import torch.nn.functional as F",
        "",
        *[f"{name} = {value!r}" for name, value in consts],
        "",
        "",
        "class Model(nn.Module):",
        f"    def __init__(self{''.join(', ' + a for a in init_args)}):",
        "        super().__init__()" + "".join(indent + line for line in init_lines),
        "",
        f"    def forward(self, x{''.join(', ' + n for n, _ in extra_inputs)}):" +
        "".join(indent + line for line in forward_lines),
        "",
        "",
        "def get_inputs():",
        *["    " + line for line in get_inputs],
        "",
        "",
        "def get_init_inputs():",
        f"    return [{', '.join(a.upper() for a in init_args)}]",
        "",
    ])
