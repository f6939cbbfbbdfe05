"""Sum over the middle dimension of a 3-D tensor (strided reduction, odd reduce length)."""
# eager estimate: 0.23 ms (bytes: read 805 MB + write 0.2 MB = 0.80 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

BATCH = 128
REDUCE = 4093
INNER = 384
DIM = 1


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, REDUCE, INNER)]


def get_init_inputs():
    return [DIM]
