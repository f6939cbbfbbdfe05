"""Conv2d with stride 2, BatchNorm2d, ReLU6."""
import torch
import torch.nn as nn

BATCH = 64
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 160
WIDTH = 160
KERNEL = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return torch.nn.functional.relu6(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
