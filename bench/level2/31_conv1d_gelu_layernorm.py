"""Conv1d, GELU (tanh form), LayerNorm over the sequence."""
# eager estimate: 3.0 ms (172 GFLOP, plus a row-norm pass over 537 MB)
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IN_CHANNELS = 128
OUT_CHANNELS = 256
LENGTH = 8192
KERNEL = 5


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.LayerNorm(LENGTH)

    def forward(self, x):
        return self.norm(F.gelu(self.conv(x), approximate='tanh'))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
