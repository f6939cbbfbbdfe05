"""Transposed 2-D convolution (nn.ConvTranspose2d, 4x4, stride 2, padding 1): the 2x upsampling of decoders."""
# eager estimate: 1.5 ms (69 GFLOP: 2 x 64 x 64 x 128 x 128 inputs x 32 x 16 MACs, TF32 cuDNN; 537 MB written)
import torch
import torch.nn as nn

BATCH = 64
IN_CHANNELS = 64
OUT_CHANNELS = 32
KERNEL = 4
SIZE = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
