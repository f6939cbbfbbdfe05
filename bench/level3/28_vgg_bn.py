"""A VGG-style network with BatchNorm: three stages of 3x3 convolution, BatchNorm (training mode: the batch's
statistics) and ReLU, two or three a stage, each stage closed by 2x2 max pooling; global average pooling and a
linear classifier."""
import torch
import torch.nn as nn

BATCH, IMAGE, CLASSES = 48, 112, 100
STAGES = [(64, 2), (128, 2), (256, 3)]


def conv_bn(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [], 3
        for cout, n in STAGES:
            for _ in range(n):
                layers += conv_bn(cin, cout)
                cin = cout
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, CLASSES)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return []
