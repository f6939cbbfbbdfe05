"""Conv2d, tanh, the mean over the image, a learned bias."""
import torch
import torch.nn as nn

BATCH = 64
IN_CHANNELS = 32
OUT_CHANNELS = 128
HEIGHT = 64
WIDTH = 64
KERNEL = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_channels) * 0.1)

    def forward(self, x):
        return torch.tanh(self.conv(x)).mean(dim=(2, 3)) + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
