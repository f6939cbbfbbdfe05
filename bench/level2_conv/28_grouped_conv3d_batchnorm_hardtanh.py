"""A grouped Conv3d (4 groups), BatchNorm3d, Hardtanh."""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 32
OUT_CHANNELS = 64
DEPTH = 16
HEIGHT = 48
WIDTH = 48
KERNEL = 3
GROUPS = 4


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=1, groups=groups)
        self.bn = nn.BatchNorm3d(out_channels)

    def forward(self, x):
        return torch.nn.functional.hardtanh(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, GROUPS]
