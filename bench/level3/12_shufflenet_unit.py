"""ShuffleNetV2 units: the channels split in two, one half through 1x1, depthwise 3x3 and 1x1 convolutions with
BatchNorm, the halves concatenated and shuffled (reshape, transpose, reshape)."""
import torch
import torch.nn as nn

BATCH = 64


def shuffle(x, groups):
    b, c, h, w = x.size()
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous().view(b, c, h, w)


class Unit(nn.Module):
    def __init__(self, channels):
        super().__init__()
        half = channels // 2
        self.branch = nn.Sequential(nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(inplace=True),
                                    nn.Conv2d(half, half, 3, 1, 1, groups=half, bias=False), nn.BatchNorm2d(half),
                                    nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(inplace=True))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return shuffle(torch.cat([a, self.branch(b)], 1), 2)


class Model(nn.Module):
    def __init__(self, channels, units):
        super().__init__()
        self.units = nn.Sequential(*[Unit(channels) for _ in range(units)])

    def forward(self, x):
        return self.units(x)


def get_inputs():
    return [torch.randn(BATCH, 116, 28, 28)]


def get_init_inputs():
    return [116, 4]
