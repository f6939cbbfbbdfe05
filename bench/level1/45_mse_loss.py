"""Mean squared error written as mean((pred - target) ** 2) over two 2-D tensors."""
# eager estimate: 2.76 ms (bytes: ~6 passes of 1.61 GB (per input: sub 2R+W, pow R+W, mean R) = 9.68 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

ROWS = 16384
COLS = 24571


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
