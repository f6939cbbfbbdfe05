"""Conv2d, a learned per-channel scale, sigmoid, AvgPool2d."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 128
WIDTH = 128
KERNEL = 3
POOL = 2


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.scale = nn.Parameter(torch.rand(out_channels, 1, 1) + 0.5)
        self.pool = nn.AvgPool2d(pool)

    def forward(self, x):
        return self.pool(torch.sigmoid(self.conv(x) * self.scale))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, POOL]
