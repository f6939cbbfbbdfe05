"""Elementwise chain (fusion test): x*2+1 -> tanh -> clamp -> scale."""
# eager estimate: 6.90 ms (bytes: ~10 passes of 2.42 GB (5 elementwise kernels, R+W each) = 24.15 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

ROWS = 24576
COLS = 24571


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x * 2.0 + 1.0
        y = torch.tanh(y)
        y = torch.clamp(y, min=-0.5, max=0.75)
        return y * 3.0


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
