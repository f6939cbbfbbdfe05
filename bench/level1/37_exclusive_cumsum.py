"""Exclusive cumulative sum along the last dimension, written as cumsum(x) - x."""
# eager estimate: 1.15 ms (bytes: ~5 passes of 805 MB (cumsum R+W, sub 2R+W) = 4.03 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

ROWS = 16384
LENGTH = 12289


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1) - x


def get_inputs():
    return [torch.rand(ROWS, LENGTH)]


def get_init_inputs():
    return []
