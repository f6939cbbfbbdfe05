"""The three IR dtypes and their torch counterparts (docs/interfaces.md: f32, i64, bool)."""
import torch

IR_TO_TORCH = {"f32": torch.float32, "i64": torch.int64, "bool": torch.bool}
TORCH_TO_IR = {t: name for name, t in IR_TO_TORCH.items()}
