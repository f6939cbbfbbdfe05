"""Conv2d, InstanceNorm2d, Mish, MaxPool2d, the sum over channels."""
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
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.norm = nn.InstanceNorm2d(out_channels)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(torch.nn.functional.mish(self.norm(self.conv(x)))).sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
