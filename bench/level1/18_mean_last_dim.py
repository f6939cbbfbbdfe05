"""Mean over the last dimension of a 2-D matrix (odd row length), keepdim=True."""
# eager estimate: 1.15 ms (bytes: read 4.03 GB + write 1.0 MB = 4.00 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

ROWS = 245760
COLS = 4093


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mean(x, dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
