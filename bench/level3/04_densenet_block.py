"""A DenseNet dense block and transition: each layer (BatchNorm, ReLU, 1x1 bottleneck, BatchNorm, ReLU, 3x3 conv)
sees the concatenation of every earlier layer's output; the transition halves the channels and the resolution."""
import torch
import torch.nn as nn

BATCH = 25


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, 4 * growth, 1, bias=False),
                                  nn.BatchNorm2d(4 * growth), nn.ReLU(inplace=True),
                                  nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

    def forward(self, features):
        return self.body(torch.cat(features, 1))


class Model(nn.Module):
    def __init__(self, cin, growth, layers):
        super().__init__()
        self.layers = nn.ModuleList([DenseLayer(cin + i * growth, growth) for i in range(layers)])
        cout = cin + layers * growth
        self.transition = nn.Sequential(nn.BatchNorm2d(cout), nn.ReLU(inplace=True), nn.Conv2d(cout, cout // 2, 1, bias=False),
                                        nn.AvgPool2d(2, 2))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return self.transition(torch.cat(features, 1))


def get_inputs():
    return [torch.randn(BATCH, 64, 56, 56)]


def get_init_inputs():
    return [64, 32, 6]
