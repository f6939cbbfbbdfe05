"""Multiply a 4-D tensor by a constructor-given Python scalar."""
# eager estimate: 1.84 ms (bytes: read 3.21 GB + write 3.21 GB = 6.44 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 64
C = 128
H = 313
W = 313
SCALE = 2.75


class Model(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s

    def forward(self, x):
        return x * self.s


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [SCALE]
