"""LayerNorm (with affine weight and bias) over the last two dimensions of a 4-D tensor."""
# eager estimate: 1.38 ms (bytes: ~2 passes of 2.41 GB (one row kernel R+W) = 4.80 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

BATCH = 48
SEQ = 512
HEADS = 96
WIDTH = 255
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, normalized_shape, eps):
        super().__init__()
        self.norm = nn.LayerNorm(normalized_shape, eps=eps, elementwise_affine=True)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HEADS, WIDTH) * 2.0 + 0.5]


def get_init_inputs():
    return [(HEADS, WIDTH), EPS]
