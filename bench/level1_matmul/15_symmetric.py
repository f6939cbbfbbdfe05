"""The product of two symmetric matrices (each drawn as (X + X^T) / 2); a general product computes it."""
# eager estimate: 2.8 ms (137 GFLOP at ~50 TFLOP/s, fp32 SGEMM without tensor cores)
import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def symmetric(n):
    x = torch.randn(n, n)
    return (x + x.T) / 2


def get_inputs():
    return [symmetric(N), symmetric(N)]


def get_init_inputs():
    return []
