"""BatchNorm2d in training mode (batch statistics) over a 4-D feature map with odd spatial size."""
# eager estimate: 1.38 ms (bytes: ~3 passes of 1.61 GB (stats R, normalise R+W) = 4.84 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 128
C = 96
H = 181
W = 181


class Model(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(N, C, H, W) * 1.5 + 0.25]


def get_init_inputs():
    return [C]
