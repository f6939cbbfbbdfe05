"""Tanh-approximated GELU over a wide 2-D matrix with an odd column count."""
# eager estimate: 0.46 ms (bytes: read 805 MB + write 805.3 MB = 1.61 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 4096
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
