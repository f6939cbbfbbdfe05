"""AvgPool1d with kernel 7, stride 3, padding 3 (padding counted) over long sequences."""
# eager estimate: 0.93 ms (bytes: read 2.42 GB + write 805.5 MB = 3.21 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 384
C = 128
L = 12289
KERNEL = 7
STRIDE = 3
PADDING = 3


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(N, C, L)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
