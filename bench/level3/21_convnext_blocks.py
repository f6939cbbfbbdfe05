"""ConvNeXt-style blocks: a 7x7 depthwise convolution, the tensor turned channels-last for a LayerNorm over the
channels and a 4x MLP with GELU, a learned per-channel scale, turned back and added to the input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, DIM, SIZE, BLOCKS = 32, 96, 56, 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.dwconv = nn.Conv2d(DIM, DIM, 7, padding=3, groups=DIM)
        self.norm = nn.LayerNorm(DIM, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)
        self.gamma = nn.Parameter(torch.full((DIM,), 0.1))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.gamma * self.fc2(F.gelu(self.fc1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*(Block() for _ in range(BLOCKS)))

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(BATCH, DIM, SIZE, SIZE)]


def get_init_inputs():
    return []
