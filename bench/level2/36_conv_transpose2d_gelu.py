"""ConvTranspose2d (stride 2 upsampling), GELU: a decoder stage."""
# eager estimate: 2 ms (137 GFLOP, a GELU pass over 537 MB)
import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 128
WIDTH = 128
KERNEL = 4


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.deconv(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
