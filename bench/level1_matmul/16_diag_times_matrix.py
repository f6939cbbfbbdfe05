"""diag(a) @ B: a diagonal matrix given by its vector a [N] times B [N, M]. The product scales B's rows; kforge
imports it as a broadcast multiply (B read and the result written once, 2 x 201 MB), where the dense form is
N x N x M multiply-adds."""
# eager estimate: 8 ms (eager builds the dense N x N matrix: 412 GFLOP at ~50 TFLOP/s, fp32 SGEMM)
import torch
import torch.nn as nn

N = 4096
M = 12288


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.diag(a) @ b


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []
