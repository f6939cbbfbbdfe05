"""The product of two lower-triangular matrices, kept lower-triangular: torch.tril(A @ B). The inputs are drawn
lower-triangular, so the product is too; kforge computes the full product and masks it (the masking fuses into
one pass after the product; the zero half is still computed)."""
# eager estimate: 2.8 ms (137 GFLOP at ~50 TFLOP/s, fp32 SGEMM without tensor cores)
import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.tril(torch.matmul(a, b))


def get_inputs():
    return [torch.tril(torch.randn(N, N)), torch.tril(torch.randn(N, N))]


def get_init_inputs():
    return []
