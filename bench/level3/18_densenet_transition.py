"""DenseNet-style dense blocks joined by a transition: each layer (BatchNorm, ReLU, 1x1 bottleneck, BatchNorm, ReLU,
3x3) adds 32 channels concatenated to all before it; the transition halves the channels (1x1) and the resolution
(2x2 average pooling)."""
import torch
import torch.nn as nn

BATCH, GROWTH = 8, 32


class DenseLayer(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * GROWTH, 1, bias=False),
                                  nn.BatchNorm2d(4 * GROWTH), nn.ReLU(), nn.Conv2d(4 * GROWTH, GROWTH, 3, 1, 1, bias=False))

    def forward(self, features):
        return self.body(torch.cat(features, 1))


class DenseBlock(nn.Module):
    def __init__(self, cin, layers):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * GROWTH) for i in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = DenseBlock(64, 6)
        c = 64 + 6 * GROWTH
        self.transition = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False),
                                        nn.AvgPool2d(2, 2))
        self.block2 = DenseBlock(c // 2, 6)

    def forward(self, x):
        return self.block2(self.transition(self.block1(x)))


def get_inputs():
    return [torch.randn(BATCH, 64, 56, 56)]


def get_init_inputs():
    return []
