"""3-D convolution (nn.Conv3d, 3x3x3, padding 1) on a video-like volume."""
# eager estimate: 2.9 ms (116 GFLOP: 2 x 8 x 64 x 32 x 64 x 64 outputs x 32 x 27 MACs, at ~40 TFLOP/s, cuDNN fp32, TF32 off)
import torch
import torch.nn as nn

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 64
KERNEL = 3
DEPTH = 32
SIZE = 64


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
