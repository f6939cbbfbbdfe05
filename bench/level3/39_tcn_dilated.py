"""A temporal convolutional network: four residual blocks of two causal dilated 1-D convolutions (kernel 3,
dilation 1, 2, 4, 8; padded on both sides, then cut back to the sequence so no step sees the future), each with
ReLU, and a 1x1 convolution head."""
import torch
import torch.nn as nn

BATCH, CHANNELS, SEQ, OUT = 32, 256, 2048, 64
DILATIONS = [1, 2, 4, 8]


class Block(nn.Module):
    def __init__(self, dilation):
        super().__init__()
        self.pad = 2 * dilation
        self.c1 = nn.Conv1d(CHANNELS, CHANNELS, 3, dilation=dilation, padding=self.pad)
        self.c2 = nn.Conv1d(CHANNELS, CHANNELS, 3, dilation=dilation, padding=self.pad)

    def forward(self, x):
        y = torch.relu(self.c1(x)[..., :-self.pad])
        y = torch.relu(self.c2(y)[..., :-self.pad])
        return torch.relu(x + y)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*(Block(d) for d in DILATIONS))
        self.head = nn.Conv1d(CHANNELS, OUT, 1)

    def forward(self, x):
        return self.head(self.blocks(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SEQ)]


def get_init_inputs():
    return []
