"""A depthwise Conv1d and SiLU (a Mamba-style short convolution)."""
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 1024
LENGTH = 8192
KERNEL = 4


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size, padding=kernel_size - 1, groups=channels)

    def forward(self, x):
        return torch.nn.functional.silu(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
