"""A Perceiver-style encoder: a learned latent array cross-attends to a long input (queries from the latents, keys
and values from the input), then two latent self-attention blocks; each attention and 4x GELU MLP pre-LayerNorm
with residuals."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, INPUTS, LATENTS, DIM, HEADS, LAYERS = 8, 4096, 256, 512, 8, 2


def heads(z):
    b, t, e = z.shape
    return z.view(b, t, HEADS, e // HEADS).transpose(1, 2)


def merge(z):
    b, h, t, d = z.shape
    return z.transpose(1, 2).reshape(b, t, h * d)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.fc, self.out = nn.LayerNorm(DIM), nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        return x + self.out(F.gelu(self.fc(self.ln(x))))


class SelfBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.qkv, self.proj, self.mlp = nn.LayerNorm(DIM), nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM), MLP()

    def forward(self, x):
        q, k, v = self.qkv(self.ln(x)).split(DIM, dim=2)
        return self.mlp(x + self.proj(merge(F.scaled_dot_product_attention(heads(q), heads(k), heads(v)))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(LATENTS, DIM) * 0.02)
        self.ln_q, self.ln_kv = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.q, self.kv, self.proj = nn.Linear(DIM, DIM), nn.Linear(DIM, 2 * DIM), nn.Linear(DIM, DIM)
        self.mlp = MLP()
        self.blocks = nn.Sequential(*(SelfBlock() for _ in range(LAYERS)))

    def forward(self, x):
        lat = self.latents.expand(x.shape[0], -1, -1)
        k, v = self.kv(self.ln_kv(x)).split(DIM, dim=2)
        y = F.scaled_dot_product_attention(heads(self.q(self.ln_q(lat))), heads(k), heads(v))
        return self.blocks(self.mlp(lat + self.proj(merge(y))))


def get_inputs():
    return [torch.randn(BATCH, INPUTS, DIM)]


def get_init_inputs():
    return []
