"""Cumulative product along the middle dimension of a 3-D tensor with values near 1."""
# eager estimate: 0.92 ms (bytes: ~2 passes of 1.61 GB (scan R+W) = 3.22 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

BATCH = 256
LENGTH = 1021
INNER = 1536
DIM = 1


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumprod(x, dim=self.dim)


def get_inputs():
    return [1.0 + 0.002 * torch.randn(BATCH, LENGTH, INNER)]


def get_init_inputs():
    return [DIM]
