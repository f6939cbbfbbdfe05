"""Softmax over long rows (last dimension, odd length) of a 2-D matrix."""
# eager estimate: 1.38 ms (bytes: ~2 passes of 2.42 GB (one row kernel R+W) = 4.83 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

ROWS = 24576
COLS = 24571


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 3.0]


def get_init_inputs():
    return []
