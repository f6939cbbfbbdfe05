"""Grouped 2-D convolution (8 groups of 32 channels, 3x3, padding 1), as in ResNeXt."""
# eager estimate: 1.9 ms (77 GFLOP: 2 x 32 x 256 x 128 x 128 outputs x 32 x 9 MACs, at ~40 TFLOP/s, cuDNN fp32, TF32 off;
# grouped engines reach less than dense ones, so likely more)
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 256
OUT_CHANNELS = 256
KERNEL = 3
GROUPS = 8
SIZE = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1, groups=groups)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, GROUPS]
