"""Swin-style window attention: the feature map cut into windows with Python arithmetic on its shape, multi-head
self-attention inside each window with a learned relative position bias, the windows put back, a residual and an
MLP. The loop over blocks and the shape arithmetic are what torch.fx's symbolic trace cannot follow."""
import torch
import torch.nn as nn

BATCH, SIZE, DIM, HEADS, WINDOW, BLOCKS = 32, 56, 96, 3, 7, 2


def windows(x, w):
    b, h, wd, c = x.shape
    x = x.view(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, w * w, c)


def unwindows(x, w, b, h, wd):
    c = x.shape[-1]
    x = x.view(b, h // w, wd // w, w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, h, wd, c)


class Block(nn.Module):
    def __init__(self, dim, heads, window):
        super().__init__()
        self.heads, self.window = heads, window
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.bias = nn.Parameter(torch.randn(heads, window * window, window * window) * 0.02)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, h, w, c = x.shape
        pad = (self.window - h % self.window) % self.window
        if pad:  # shape arithmetic: fx's proxies cannot decide this, dynamo's capture can
            raise ValueError("the size must be a multiple of the window")
        t = windows(self.norm1(x), self.window)
        n = t.shape[1]
        q, k, v = self.qkv(t).view(-1, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5 + self.bias
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(-1, n, c)
        x = x + unwindows(self.proj(y), self.window, b, h, w)
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, dim, heads, window, blocks):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, heads, window) for _ in range(blocks)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def get_inputs():
    return [torch.randn(BATCH, SIZE, SIZE, DIM)]


def get_init_inputs():
    return [DIM, HEADS, WINDOW, BLOCKS]
