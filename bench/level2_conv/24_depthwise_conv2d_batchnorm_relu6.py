"""A depthwise Conv2d, BatchNorm2d, ReLU6 (a MobileNet block's first half)."""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 96
HEIGHT = 112
WIDTH = 112
KERNEL = 3


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=1, groups=channels, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.nn.functional.relu6(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
