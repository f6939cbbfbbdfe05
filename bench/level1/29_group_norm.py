"""GroupNorm with 8 groups (affine) over a 4-D feature map with odd spatial sizes."""
# eager estimate: 1.38 ms (bytes: ~3 passes of 1.61 GB (stats R, normalise R+W) = 4.84 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

N = 64
C = 128
H = 223
W = 221
GROUPS = 8
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, num_groups, num_channels, eps):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels, eps=eps)

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [GROUPS, C, EPS]
