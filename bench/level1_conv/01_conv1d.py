"""1-D convolution (nn.Conv1d, kernel 7, 'same'-sized by padding 3) over long sequences."""
# eager estimate: 3.0 ms (120 GFLOP: 2 x 32 x 128 x 16384 outputs x 128 x 7 MACs, at ~40 TFLOP/s, cuDNN fp32, TF32 off)
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 128
KERNEL = 7
LENGTH = 16384


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
