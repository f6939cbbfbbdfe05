"""Two ResNeXt bottleneck blocks (cardinality 32): 1x1 convolution, a grouped 3x3 convolution of 32 groups, 1x1
convolution, each with BatchNorm, ReLU between, and an identity residual."""
import torch
import torch.nn as nn

BATCH, CHANNELS, SIZE, WIDTH, GROUPS = 64, 256, 56, 128, 32


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(CHANNELS, WIDTH, 1, bias=False), nn.BatchNorm2d(WIDTH), nn.ReLU(),
            nn.Conv2d(WIDTH, WIDTH, 3, padding=1, groups=GROUPS, bias=False), nn.BatchNorm2d(WIDTH), nn.ReLU(),
            nn.Conv2d(WIDTH, CHANNELS, 1, bias=False), nn.BatchNorm2d(CHANNELS))

    def forward(self, x):
        return torch.relu(x + self.body(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return []
