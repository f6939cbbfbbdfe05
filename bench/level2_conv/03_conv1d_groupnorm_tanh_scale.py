"""Conv1d, GroupNorm, tanh, a scalar scale."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 32
OUT_CHANNELS = 128
LENGTH = 16384
KERNEL = 7
GROUPS = 8
SCALE = 1.7


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups, scale):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=3)
        self.norm = nn.GroupNorm(groups, out_channels)
        self.scale = scale

    def forward(self, x):
        return torch.tanh(self.norm(self.conv(x))) * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, GROUPS, SCALE]
