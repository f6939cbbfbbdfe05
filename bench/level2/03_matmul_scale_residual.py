"""x @ W, scaled by a constant, plus a residual input: out = (x @ W) * SCALE + residual."""
# eager estimate: 2.9 ms (137 GFLOP at ~50 TFLOP/s fp32, plus two elementwise passes over 64 MB)
import torch
import torch.nn as nn

ROWS = 4096
WIDTH = 4096
SCALE = 0.125


class Model(nn.Module):
    def __init__(self, width, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width, width) / width ** 0.5)
        self.scale = scale

    def forward(self, x, residual):
        return torch.matmul(x, self.weight) * self.scale + residual


def get_inputs():
    return [torch.randn(ROWS, WIDTH), torch.randn(ROWS, WIDTH)]


def get_init_inputs():
    return [WIDTH, SCALE]
