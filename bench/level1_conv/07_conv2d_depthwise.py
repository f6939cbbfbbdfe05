"""Depthwise 2-D convolution (groups = channels, 5x5, padding 2), as in MobileNet: memory-bound."""
# eager estimate: ~1.2 ms (2.1 GB moved: 0.5 ms at the H200's ~4.2 TB/s copy rate, and cuDNN's fp32 depthwise kernels
# reach roughly half of it; its 13 GFLOP take 0.3 ms at ~40 TFLOP/s)
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 256
KERNEL = 5
SIZE = 128


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
