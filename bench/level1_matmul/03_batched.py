"""Batched matrix product (torch.bmm): BATCH independent [M, K] @ [K, N] products."""
# eager estimate: 2.7 ms (137 GFLOP at ~50 TFLOP/s, fp32 SGEMM without tensor cores)
import torch
import torch.nn as nn

BATCH = 128
M = 512
K = 1024
N = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
