"""Transposed 1-D convolution (nn.ConvTranspose1d, kernel 5, dilation 2, padding 4: the length is kept), no bias."""
# eager estimate: 1.5 ms (43 GFLOP: 2 x 64 x 128 x 8192 inputs x 64 x 5 MACs; 134 MB written)
import torch
import torch.nn as nn

BATCH = 64
IN_CHANNELS = 128
OUT_CHANNELS = 64
KERNEL = 5
LENGTH = 8192


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, padding=4, dilation=2, bias=False)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
