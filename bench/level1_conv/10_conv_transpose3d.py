"""Transposed 3-D convolution (nn.ConvTranspose3d, 3x3x3, stride 2, padding 1, output_padding 1) on volumes."""
# eager estimate: 1.5 ms (29 GFLOP: 2 x 8 x 32 x 32 x 64 x 64 inputs x 16 x 27 MACs; 537 MB written)
import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 16
KERNEL = 3
DEPTH = 32
SIZE = 64


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
