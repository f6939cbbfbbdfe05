"""Conv3d, LeakyReLU, AvgPool3d, a scalar scale."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 16
OUT_CHANNELS = 32
DEPTH = 32
HEIGHT = 64
WIDTH = 64
KERNEL = 3
SCALE = 2.0


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=1)
        self.pool = nn.AvgPool3d(2)
        self.scale = scale

    def forward(self, x):
        return self.pool(torch.nn.functional.leaky_relu(self.conv(x), 0.1)) * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, SCALE]
