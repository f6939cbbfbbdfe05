"""Conv3d, GroupNorm with 8 groups, the mean over everything but the batch."""
# eager estimate: 1.5 ms (58 GFLOP, plus group statistics over 268 MB)
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 16
OUT_CHANNELS = 32
DEPTH = 32
HEIGHT = 64
WIDTH = 64
KERNEL = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.gn = nn.GroupNorm(8, out_channels)

    def forward(self, x):
        return self.gn(self.conv(x)).mean(dim=(1, 2, 3, 4))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
