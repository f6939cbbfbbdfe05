"""MaxPool1d with kernel 5, stride 2, padding 2 and dilation 2 over long sequences."""
# eager estimate: 1.05 ms (bytes: read 2.42 GB + write 1.21 GB = 3.63 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 192
C = 256
L = 12285
KERNEL = 5
STRIDE = 2
PADDING = 2
DILATION = 2


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(N, C, L)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING, DILATION]
