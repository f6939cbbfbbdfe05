"""Conv2d with dilation 2, ELU, MaxPool2d."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 128
WIDTH = 128
KERNEL = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=2, dilation=2)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(torch.nn.functional.elu(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
