"""AvgPool3d with kernel 3, stride 2, padding 1 over an odd-sized volume."""
# eager estimate: 0.26 ms (bytes: read 805 MB + write 103.8 MB = 0.91 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 8
C = 24
D = 63
H = 127
W = 131
KERNEL = 3
STRIDE = 2
PADDING = 1


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(N, C, D, H, W)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
