"""Product over a short middle dimension of a 3-D tensor with values near 1."""
# eager estimate: 1.15 ms (bytes: read 3.89 GB + write 125.5 MB = 4.00 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

BATCH = 20480
REDUCE = 31
INNER = 1531


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.prod(x, dim=1)


def get_inputs():
    return [1.0 + 0.01 * torch.randn(BATCH, REDUCE, INNER)]


def get_init_inputs():
    return []
