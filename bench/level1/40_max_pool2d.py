"""MaxPool2d with kernel 3, stride 2, padding 1 and dilation (2, 1) over odd-sized feature maps."""
# eager estimate: 0.87 ms (bytes: read 2.42 GB + write 603.9 MB = 3.03 GB, one kernel, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 96
C = 96
H = 257
W = 255
KERNEL = 3
STRIDE = 2
PADDING = 1
DILATION = (2, 1)


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING, DILATION]
