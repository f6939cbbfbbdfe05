"""MobileNetV3-style inverted residual blocks: 1x1 expansion with hardswish, a depthwise convolution, squeeze and
excitation gated by hardsigmoid, a linear 1x1 projection, the input added back where the shape stays."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16


class Block(nn.Module):
    def __init__(self, cin, hidden, cout, kernel, stride):
        super().__init__()
        self.residual = stride == 1 and cin == cout
        self.expand = nn.Sequential(nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(hidden, hidden, kernel, stride, kernel // 2, groups=hidden, bias=False),
                                       nn.BatchNorm2d(hidden), nn.Hardswish())
        self.squeeze = nn.Conv2d(hidden, hidden // 4, 1)
        self.excite = nn.Conv2d(hidden // 4, hidden, 1)
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = self.depthwise(self.expand(x))
        gate = F.hardsigmoid(self.excite(F.relu(self.squeeze(F.adaptive_avg_pool2d(h, 1)))))
        y = self.project(h * gate)
        return x + y if self.residual else y


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(Block(16, 64, 24, 3, 2), Block(24, 72, 24, 3, 1), Block(24, 96, 40, 5, 2),
                                    Block(40, 240, 40, 5, 1), Block(40, 240, 80, 3, 2), Block(80, 480, 80, 3, 1))

    def forward(self, x):
        return self.blocks(self.stem(x))


def get_inputs():
    return [torch.randn(BATCH, 3, 224, 224)]


def get_init_inputs():
    return []
