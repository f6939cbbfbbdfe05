"""RMS normalisation over the channel dimension of a 4-D tensor, written with primitives."""
# eager estimate: 2.30 ms (bytes: ~5 passes of 1.61 GB (pow R+W, mean R, div R+W) = 8.08 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 32
C = 64
H = 449
W = 439
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [EPS]
