"""Conv2d, InstanceNorm2d, LeakyReLU."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 16
OUT_CHANNELS = 64
HEIGHT = 128
WIDTH = 128
KERNEL = 3
SLOPE = 0.2


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, slope):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.norm = nn.InstanceNorm2d(out_channels)
        self.slope = slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(self.norm(self.conv(x)), self.slope)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, SLOPE]
