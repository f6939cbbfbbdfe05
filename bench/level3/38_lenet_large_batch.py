"""LeNet-5 over a large batch of 32x32 images: two 5x5 convolutions with tanh and 2x2 average pooling, then three
Linear layers (120, 84, 10) with tanh between."""
import torch
import torch.nn as nn

BATCH = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 6, 5, padding=2), nn.Conv2d(6, 16, 5)
        self.pool = nn.AvgPool2d(2)
        self.f1, self.f2, self.f3 = nn.Linear(16 * 6 * 6, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(torch.tanh(self.c1(x)))
        x = self.pool(torch.tanh(self.c2(x)))
        x = torch.tanh(self.f1(x.flatten(1)))
        return self.f3(torch.tanh(self.f2(x)))


def get_inputs():
    return [torch.randn(BATCH, 1, 32, 32)]


def get_init_inputs():
    return []
