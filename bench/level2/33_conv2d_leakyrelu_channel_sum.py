"""Conv2d, LeakyReLU, the sum over channels (keepdim), plus the input's own channel mean as a residual."""
# eager estimate: 1.3 ms (77 GFLOP, plus a channel reduction over 537 MB)
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 128
WIDTH = 128
KERNEL = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        y = F.leaky_relu(self.conv(x), 0.2).sum(dim=1, keepdim=True)
        return y + x.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
