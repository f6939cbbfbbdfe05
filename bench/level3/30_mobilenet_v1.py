"""A MobileNetV1-style network: a strided 3x3 stem, then depthwise-separable blocks (3x3 depthwise convolution,
BatchNorm, ReLU6, 1x1 pointwise convolution, BatchNorm, ReLU6), some strided; global average pooling and a
classifier."""
import torch
import torch.nn as nn

BATCH, IMAGE, CLASSES = 48, 160, 1000
BLOCKS = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2), (512, 512, 1)]


def separable(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(),
        nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6())


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU6())
        self.blocks = nn.Sequential(*(separable(*b) for b in BLOCKS))
        self.fc = nn.Linear(512, CLASSES)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return []
