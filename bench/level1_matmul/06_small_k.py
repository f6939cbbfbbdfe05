"""Product with a short inner dimension: [M, K] @ [K, N] with K = 128; the [M, N] result (1 GB) is written
once, so it is as much a bandwidth problem as a compute one."""
# eager estimate: 1.4 ms (69 GFLOP at ~50 TFLOP/s, fp32 SGEMM without tensor cores; 1.1 GB written)
import torch
import torch.nn as nn

M = 16384
K = 128
N = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.mm(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
