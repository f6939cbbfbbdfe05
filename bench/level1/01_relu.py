"""ReLU over a large 2-D activation matrix."""
# eager estimate: 1.84 ms (bytes: read 3.22 GB + write 3.22 GB = 6.44 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

ROWS = 49152
COLS = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
