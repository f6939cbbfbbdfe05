"""Product with a long inner dimension: [M, K] @ [K, N] with K much larger than M and N.
Accumulating 32768 terms in fp32 can leave rounding differences above 1e-4 on results near zero, whatever the
summation order, so the strict tier may be out of reach here (as for a long fp32 sum)."""
# eager estimate: 5.5 ms (275 GFLOP at ~50 TFLOP/s, fp32 SGEMM without tensor cores)
import torch
import torch.nn as nn

M = 2048
K = 32768
N = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
