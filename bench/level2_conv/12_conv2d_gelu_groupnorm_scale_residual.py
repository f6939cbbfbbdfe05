"""Conv2d, GELU, GroupNorm, a scalar scale, the input added back."""
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 64
HEIGHT = 96
WIDTH = 96
KERNEL = 3
GROUPS = 8
SCALE = 0.5


class Model(nn.Module):
    def __init__(self, channels, kernel_size, groups, scale):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=1)
        self.norm = nn.GroupNorm(groups, channels)
        self.scale = scale

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.conv(x))) * self.scale + x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL, GROUPS, SCALE]
