"""A ViT-style classifier: a strided convolution cuts 16x16 patches, a class token is prepended and a learned
position embedding added, then four pre-LayerNorm blocks (F.scaled_dot_product_attention, a 4x GELU MLP) and a
head on the class token."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, IMAGE, PATCH, DIM, HEADS, LAYERS, CLASSES = 32, 224, 16, 384, 6, 4, 1000
TOKENS = (IMAGE // PATCH) ** 2 + 1


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.fc, self.out = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        b, t, e = x.shape
        qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, HEADS, e // HEADS).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, e))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.patches = nn.Conv2d(3, DIM, PATCH, stride=PATCH)
        self.cls = nn.Parameter(torch.randn(1, 1, DIM) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, TOKENS, DIM) * 0.02)
        self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.ln = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, img):
        x = self.patches(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.ln(self.blocks(x))[:, 0])


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return []
