"""MaxPool3d with kernel 3, stride 2, padding 1 and dilation 2 over an odd-sized volume."""
# eager estimate: 0.26 ms (bytes: read 800 MB + write 96.6 MB = 0.90 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 8
C = 32
D = 67
H = 131
W = 89
KERNEL = 3
STRIDE = 2
PADDING = 1
DILATION = 2


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(N, C, D, H, W)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING, DILATION]
