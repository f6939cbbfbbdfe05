"""SqueezeNet-style: a stem, then fire modules (a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated), max pooling
with ceil_mode between them, and a 1x1 convolution classifier averaged over the image."""
import torch
import torch.nn as nn

BATCH = 25


class Fire(nn.Module):
    def __init__(self, cin, squeeze, expand):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1 = nn.Conv2d(squeeze, expand, 1)
        self.expand3 = nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x):
        s = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.expand1(s)), torch.relu(self.expand3(s))], 1)


class Model(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 96, 7, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(96, 16, 64), Fire(128, 16, 64), Fire(128, 32, 128), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(256, 32, 128), Fire(256, 48, 192), Fire(384, 48, 192), Fire(384, 64, 256),
            nn.MaxPool2d(3, 2, ceil_mode=True), Fire(512, 64, 256))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, classes, 1), nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def get_inputs():
    return [torch.randn(BATCH, 3, 224, 224)]


def get_init_inputs():
    return [1000]
