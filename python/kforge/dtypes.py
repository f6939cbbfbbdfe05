"""The IR dtypes and their torch counterparts (docs/interfaces.md). f16 and bf16 are storage: a half-precision
task's inputs, weights and outputs; the graph reads them through a cast to f32 and computes in f32
(compute_dtype)."""
import torch

IR_TO_TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i64": torch.int64, "bool": torch.bool}
TORCH_TO_IR = {t: name for name, t in IR_TO_TORCH.items()}
HALF = (torch.float16, torch.bfloat16)
FLOATS = (torch.float32, *HALF)  # the float dtypes a task carries


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the IR computes a value of `dtype` in: float32 for the half-precision ones (as PyTorch's half
    kernels accumulate and compute inside, each op rounding only its output)."""
    return torch.float32 if dtype in HALF else dtype
