"""A 4-D tensor [B, I, J, L] times one matrix [L, K] over its last dim (torch.matmul broadcasts the matrix)."""
# eager estimate: 2.1 ms (103 GFLOP at ~50 TFLOP/s, fp32 SGEMM without tensor cores)
import torch
import torch.nn as nn

B = 8
I = 64
J = 128
L = 768
K = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return torch.matmul(x, w)


def get_inputs():
    return [torch.randn(B, I, J, L), torch.randn(L, K)]


def get_init_inputs():
    return []
