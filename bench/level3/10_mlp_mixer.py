"""An MLP-Mixer: patches by a strided convolution, then mixer layers alternating a token-mixing MLP (across patches,
transposed with einops) and a channel-mixing MLP, each pre-norm with a residual, and a head on the mean token."""
import torch
import torch.nn as nn
from einops.layers.torch import Rearrange

BATCH, IMAGE, PATCH, DIM, LAYERS = 16, 224, 16, 512, 4


class MixerLayer(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.tokens = nn.Sequential(Rearrange("b n d -> b d n"), nn.Linear(tokens, 2 * tokens), nn.GELU(),
                                    nn.Linear(2 * tokens, tokens), Rearrange("b d n -> b n d"))
        self.norm2 = nn.LayerNorm(dim)
        self.channels = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.tokens(self.norm1(x))
        return x + self.channels(self.norm2(x))


class Model(nn.Module):
    def __init__(self, image, patch, dim, layers, classes):
        super().__init__()
        tokens = (image // patch) ** 2
        self.patches = nn.Sequential(nn.Conv2d(3, dim, patch, patch), Rearrange("b d h w -> b (h w) d"))
        self.layers = nn.Sequential(*[MixerLayer(tokens, dim) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.norm(self.layers(self.patches(x))).mean(dim=1))


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return [IMAGE, PATCH, DIM, LAYERS, 1000]
