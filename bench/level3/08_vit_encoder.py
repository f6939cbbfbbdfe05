"""A small Vision Transformer: patches cut with einops and projected, a class token and position embeddings, two
encoder layers (nn.MultiheadAttention and a GELU MLP, pre-norm), and a head on the class token."""
import torch
import torch.nn as nn
from einops import rearrange, repeat

BATCH, IMAGE, PATCH, DIM, HEADS, LAYERS, CLASSES = 32, 224, 16, 384, 6, 2, 1000


class Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, image, patch, dim, heads, layers, classes):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim))
        self.layers = nn.Sequential(*[Layer(dim, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        x = self.embed(rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=self.patch, p2=self.patch))
        cls = repeat(self.cls, "1 1 d -> b 1 d", b=x.shape[0])
        x = self.layers(torch.cat([cls, x], dim=1) + self.pos)
        return self.head(self.norm(x[:, 0]))


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return [IMAGE, PATCH, DIM, HEADS, LAYERS, CLASSES]
