"""2-D convolution (nn.Conv2d, 3x3, padding 1) on square images."""
# eager estimate: 3.9 ms (155 GFLOP: 2 x 16 x 128 x 256 x 256 outputs x 64 x 9 MACs, at ~40 TFLOP/s, cuDNN fp32, TF32 off)
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
KERNEL = 3
SIZE = 256


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
