"""2-D convolution, 3x3 with stride 2, dilation 2 and padding 2 (256x256 -> 128x128), no bias."""
# eager estimate: 3.9 ms (155 GFLOP: 2 x 16 x 256 x 128 x 128 outputs x 128 x 9 MACs, at ~40 TFLOP/s, cuDNN fp32, TF32 off)
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 256
KERNEL = 3
SIZE = 256


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=2, padding=2, dilation=2, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
