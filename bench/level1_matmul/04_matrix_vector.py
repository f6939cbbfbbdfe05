"""Matrix-vector product: a weight matrix [ROWS, COLS] (a parameter) times an input vector [COLS].
Memory-bound: the matrix is read once (4.3 GB), so it is a parameter, stored once in the task bundle rather than
in every hidden input set."""
# eager estimate: 1.2 ms (4.3 GB read at ~3.5 TB/s; 2.1 GFLOP)
import torch
import torch.nn as nn

ROWS = 32768
COLS = 32768


class Model(nn.Module):
    def __init__(self, rows, cols):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(rows, cols))

    def forward(self, v):
        return torch.matmul(self.weight, v)


def get_inputs():
    return [torch.randn(COLS)]


def get_init_inputs():
    return [ROWS, COLS]
