"""Sum over the middle dimension of a 3-D tensor (strided reduction, odd reduce length)."""
# eager estimate: 1.15 ms (bytes: read 4.03 GB + write 1.0 MB = 4.00 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

BATCH = 640
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
