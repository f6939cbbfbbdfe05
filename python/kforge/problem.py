"""Loading a KernelBench problem file: the module, its model built with a fixed seed, and input draws."""
import hashlib
import importlib.util
import math
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch

from kforge.errors import ImportProblemError

# KernelBench's harness seeds 42 before building Model and ModelNew; using the same seed gives the same weights
# as its evaluation does.
MODEL_SEED = 42

REQUIRED = ("Model", "get_inputs", "get_init_inputs")

DROPOUTS = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d, torch.nn.AlphaDropout,
            torch.nn.FeatureAlphaDropout)


def dropout_off(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with its dropout modules in eval mode, where they are the identity, every other module as built
    (BatchNorm keeps training mode, as KernelBench builds models): a random mask has no reference to judge a kernel
    by, and a deployed model runs dropout as the identity. Applied to the reference and to every candidate alike;
    F.dropout called in forward with training on stays random, and is refused."""
    for m in model.modules():
        if isinstance(m, DROPOUTS):
            m.eval()
    return model


def random_seed() -> int:
    """A seed for a hidden input set: from the OS, never derived from anything written down."""
    return int.from_bytes(os.urandom(8), "little") >> 1  # 63 bits: torch.manual_seed takes any of them


NUMBERS = (bool, int, float)

# KernelBench's --precision: the model and the float inputs cast to one dtype before anything runs.
PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def task_name(stem: str, precision: str | None) -> str:
    """A task's name: the problem file's stem, and a precision other than fp32 (`_fp16`, `_bf16`), so that one
    problem's tasks in several precisions keep apart in reports and the measurement database."""
    return stem + (f"_{precision}" if precision not in (None, "fp32") else "")


def cast_floats(tensors: list, dtype) -> list:
    return [t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in tensors]


def bind_numbers(model: torch.nn.Module, numbers: dict[int, object], count: int) -> torch.nn.Module:
    """`model` with the Python numbers among its inputs fixed: its forward then takes the tensors alone, in their
    order. The instance keeps its class's name, attributes and parameter names (only its class is swapped for a
    subclass), so state dicts, tracing and torch.compile see the same model. The numbers reach the original forward
    through a closure (any float, inf and NaN included), and the new forward keeps the original's globals, so
    torch.fx still sees the math functions the problem's module imported by name."""
    if not numbers:
        return model
    cls = type(model)
    held = sorted(numbers)
    tensors = [f"x{i}" for i in range(count) if i not in numbers]
    call = ", ".join(f"_n{i}" if i in numbers else f"x{i}" for i in range(count))
    scope = {}
    exec(f"def make(_forward, {', '.join(f'_n{i}' for i in held)}):\n"  # noqa: S102
         f"    def forward(self, {', '.join(tensors)}):\n        return _forward(self, {call})\n    return forward\n", scope)
    made = scope["make"](cls.forward, *[numbers[i] for i in held])
    forward = types.FunctionType(made.__code__, cls.forward.__globals__, "forward", None, made.__closure__)
    model.__class__ = type(cls.__name__, (cls,), {"forward": forward, "__module__": cls.__module__})
    return model


def same_numbers(a: dict, b: dict) -> bool:
    """Equal draws of a problem's numbers, a NaN equal to a NaN."""
    def same(x, y):
        return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


@dataclass
class Problem:
    path: Path
    module: ModuleType
    # get_inputs()'s Python numbers by position (a scale, a dim): constants of the problem, the same in every draw,
    # bound into the model (bind_numbers); None before the first draw.
    numbers: dict | None = None
    input_count: int = 0
    # KernelBench's precision (PRECISIONS' keys): Model, every candidate's ModelNew (as_precision) and the float
    # inputs cast to it; None: the file's own dtypes.
    precision: str | None = None

    @property
    def name(self) -> str:
        return task_name(self.path.stem, self.precision)

    def as_precision(self, model: torch.nn.Module) -> torch.nn.Module:
        """`model` (Model or a candidate's ModelNew) in the problem's precision, as KernelBench's harness casts both."""
        return model.to(PRECISIONS[self.precision]) if self.precision else model

    def fail(self, reason: str) -> ImportProblemError:
        return ImportProblemError(self.path, reason)

    def bind(self, model: torch.nn.Module) -> torch.nn.Module:
        """`model` (Model or a candidate's ModelNew) taking the problem's tensors alone (bind_numbers)."""
        if self.numbers is None:
            gpus = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
            with torch.random.fork_rng(devices=gpus):  # the caller's random state stays where it was
                try:
                    self.draw_inputs(0, "meta")  # the numbers, without allocating the tensors
                except ImportProblemError:
                    self.draw_inputs(0, "cpu")  # a get_inputs() the meta device cannot run
        return bind_numbers(model, self.numbers, self.input_count)

    def build_model(self) -> torch.nn.Module:
        """Model(*get_init_inputs()) on the CPU after seeding, as KernelBench builds it before moving it."""
        torch.manual_seed(MODEL_SEED)
        try:
            model = self.module.Model(*self.module.get_init_inputs())
        except Exception as e:
            raise self.fail(f"Model(*get_init_inputs()) failed: {type(e).__name__}: {e}") from e
        if not isinstance(model, torch.nn.Module):
            raise self.fail(f"Model(...) gave a {type(model).__name__}, not a torch.nn.Module")
        return self.bind(dropout_off(self.as_precision(model)))

    def draw_inputs(self, seed: int, device: str) -> list[torch.Tensor]:
        """get_inputs()'s tensors under `seed`, created directly on `device`: the default-device context makes the
        problem's torch.randn land on the GPU, which matters for inputs of several GB. Python numbers among them
        are the problem's constants (bound into its model: bind): a number that changes between draws is refused."""
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                inputs = self.module.get_inputs()
        except Exception as e:
            raise self.fail(f"get_inputs() failed: {type(e).__name__}: {e}") from e
        if not isinstance(inputs, (list, tuple)):
            raise self.fail(f"get_inputs() returned a {type(inputs).__name__}, not a list of tensors")
        numbers = {}
        for i, t in enumerate(inputs):
            if isinstance(t, NUMBERS):
                numbers[i] = t
            elif not isinstance(t, torch.Tensor):
                raise self.fail(f"get_inputs() item {i} is a {type(t).__name__}, not a tensor or a Python number")
        if self.numbers is None:
            self.numbers, self.input_count = numbers, len(inputs)
        elif not same_numbers(numbers, self.numbers) or len(inputs) != self.input_count:
            raise self.fail(f"get_inputs()'s Python numbers change between draws ({self.numbers}, then {numbers}): "
                            "kforge takes them as constants of the problem")
        tensors = [t.to(device) for t in inputs if isinstance(t, torch.Tensor)]  # a problem may build on the CPU
        return cast_floats(tensors, PRECISIONS[self.precision]) if self.precision else tensors


def load_problem(path, precision: str | None = None) -> Problem:
    """Import the problem file under a module name unique to its path, so two problems with the same file name
    (level1/1_x.py, level2/1_x.py) do not replace each other in sys.modules. `precision` (fp32, fp16, bf16) casts
    it as KernelBench's --precision does; None keeps the file's own dtypes."""
    path = Path(path).resolve()
    if precision is not None and precision not in PRECISIONS:
        raise ImportProblemError(path, f"precision '{precision}' is not one of {', '.join(PRECISIONS)}")
    if not path.is_file():
        raise ImportProblemError(path, "no such file")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    name = f"kforge_problem_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling in a problem look themselves up here
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        del sys.modules[name]
        raise ImportProblemError(path, f"syntax error at line {e.lineno}: {e.msg}") from e
    except Exception as e:
        del sys.modules[name]
        raise ImportProblemError(path, f"loading failed: {type(e).__name__}: {e}") from e
    missing = [attr for attr in REQUIRED if not hasattr(module, attr)]
    if missing:
        raise ImportProblemError(path, f"defines no {', '.join(missing)} (a KernelBench problem defines "
                                       "Model, get_inputs and get_init_inputs)")
    return Problem(path, module, precision=precision)
