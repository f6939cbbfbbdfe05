"""Conv2d, BatchNorm2d, the input added back, then ReLU (a residual block's tail)."""
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 128
HEIGHT = 56
WIDTH = 56
KERNEL = 3


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)) + x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
