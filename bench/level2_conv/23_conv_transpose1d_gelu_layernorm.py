"""ConvTranspose1d, GELU, LayerNorm over the length."""
import torch
import torch.nn as nn

BATCH = 64
IN_CHANNELS = 128
OUT_CHANNELS = 64
LENGTH = 4096
KERNEL = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, length):
        super().__init__()
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, padding=1)
        self.norm = nn.LayerNorm(length)

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, LENGTH]
