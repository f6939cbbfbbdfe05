"""An Inception-v3 module with factorised convolutions: four branches (1x1; 1x1 then 1x7 then 7x1; 1x1 then 7x1,
1x7, 7x1, 1x7; 3x3 average pooling then 1x1), each convolution with BatchNorm and ReLU, concatenated along the
channels; two modules in a row."""
import torch
import torch.nn as nn

BATCH, CHANNELS, SIZE, MID = 64, 768, 17, 128


def conv(cin, cout, k, p):
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=p, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class Module(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = conv(CHANNELS, 192, 1, 0)
        self.b7 = nn.Sequential(conv(CHANNELS, MID, 1, 0), conv(MID, MID, (1, 7), (0, 3)), conv(MID, 192, (7, 1), (3, 0)))
        self.b77 = nn.Sequential(conv(CHANNELS, MID, 1, 0), conv(MID, MID, (7, 1), (3, 0)), conv(MID, MID, (1, 7), (0, 3)),
                                 conv(MID, MID, (7, 1), (3, 0)), conv(MID, 192, (1, 7), (0, 3)))
        self.pool = nn.Sequential(nn.AvgPool2d(3, stride=1, padding=1), conv(CHANNELS, 192, 1, 0))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b7(x), self.b77(x), self.pool(x)], dim=1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.modules_ = nn.Sequential(Module(), Module())

    def forward(self, x):
        return self.modules_(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return []
