"""Conv1d, GELU, MaxPool1d."""
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
LENGTH = 16384
KERNEL = 3
POOL = 2


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool1d(pool)

    def forward(self, x):
        return self.pool(torch.nn.functional.gelu(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, POOL]
