"""Tanh-approximated GELU over a wide 2-D matrix with an odd column count."""
# eager estimate: 1.84 ms (bytes: read 3.22 GB + write 3.22 GB = 6.44 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 16384
COLS = 49151


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x, approximate='tanh')


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
