"""EfficientNet-style MBConv blocks: a 1x1 expansion with SiLU, a depthwise convolution with SiLU, squeeze and
excitation (global average pooling, two 1x1 convolutions, a sigmoid gate on the channels), a 1x1 projection, and the
input added back where the shape stays."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32


class MBConv(nn.Module):
    def __init__(self, cin, cout, kernel, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.expand = nn.Sequential(nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.SiLU())
        self.depthwise = nn.Sequential(nn.Conv2d(hidden, hidden, kernel, stride, kernel // 2, groups=hidden, bias=False),
                                       nn.BatchNorm2d(hidden), nn.SiLU())
        self.se_reduce = nn.Conv2d(hidden, max(1, cin // 4), 1)
        self.se_expand = nn.Conv2d(max(1, cin // 4), hidden, 1)
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = self.depthwise(self.expand(x))
        s = F.adaptive_avg_pool2d(h, 1)
        h = h * torch.sigmoid(self.se_expand(F.silu(self.se_reduce(s))))
        y = self.project(h)
        return x + y if self.residual else y


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU())
        self.blocks = nn.Sequential(MBConv(32, 16, 3, 1, 1), MBConv(16, 24, 3, 2, 6), MBConv(24, 24, 3, 1, 6),
                                    MBConv(24, 40, 5, 2, 6), MBConv(40, 40, 5, 1, 6))
        self.head = nn.Linear(40, 1000)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean(dim=(2, 3)))


def get_inputs():
    return [torch.randn(BATCH, 3, 224, 224)]


def get_init_inputs():
    return []
