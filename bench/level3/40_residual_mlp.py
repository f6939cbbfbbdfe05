"""A deep residual MLP (an MLP-ResNet over tabular features): an input Linear, six pre-LayerNorm residual blocks of
Linear, GELU and Linear at width 1024 with a 4x expansion, and a final LayerNorm and Linear head."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, FEATURES, WIDTH, BLOCKS, OUT = 4096, 512, 1024, 6, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.fc, self.out = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        return x + self.out(F.gelu(self.fc(self.ln(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(FEATURES, WIDTH)
        self.blocks = nn.Sequential(*(Block() for _ in range(BLOCKS)))
        self.ln, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, OUT)

    def forward(self, x):
        return self.head(self.ln(self.blocks(self.inp(x))))


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
