"""2-D convolution with an asymmetric 3x5 kernel (padding (1, 2)) on a wide, non-square input."""
# eager estimate: 4.8 ms (193 GFLOP: 2 x 16 x 128 x 128 x 384 outputs x 64 x 15 MACs, at ~40 TFLOP/s, cuDNN fp32, TF32 off)
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 128
WIDTH = 384


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=(1, 2))

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, (3, 5)]
