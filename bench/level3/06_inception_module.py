"""Inception (GoogLeNet) modules: four branches (1x1; 1x1 then 3x3; 1x1 then 5x5; 3x3 max pooling then 1x1) run on
the same input and concatenated along the channels, two modules in a row."""
import torch
import torch.nn as nn

BATCH = 64


def conv_relu(cin, cout, k):
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2), nn.ReLU(inplace=True))


class Inception(nn.Module):
    def __init__(self, cin, c1, c3r, c3, c5r, c5, pool):
        super().__init__()
        self.b1 = conv_relu(cin, c1, 1)
        self.b3 = nn.Sequential(conv_relu(cin, c3r, 1), conv_relu(c3r, c3, 3))
        self.b5 = nn.Sequential(conv_relu(cin, c5r, 1), conv_relu(c5r, c5, 5))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_relu(cin, pool, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Inception(192, 64, 96, 128, 16, 32, 32)
        self.b = Inception(256, 128, 128, 192, 32, 96, 64)

    def forward(self, x):
        return self.b(self.a(x))


def get_inputs():
    return [torch.randn(BATCH, 192, 28, 28)]


def get_init_inputs():
    return []
