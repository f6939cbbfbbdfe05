"""Grouped transposed 2-D convolution (4 groups, 3x3, stride 2, padding 1, output_padding 1)."""
# eager estimate: 1.0 ms (9.7 GFLOP: 2 x 32 x 128 x 64 x 64 inputs x 32 x 9 MACs; 268 MB written)
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 128
GROUPS = 4
KERNEL = 3
SIZE = 64


class Model(nn.Module):
    def __init__(self, channels, groups, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(channels, channels, kernel_size, stride=2, padding=1, output_padding=1,
                                         groups=groups)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS, GROUPS, KERNEL]
