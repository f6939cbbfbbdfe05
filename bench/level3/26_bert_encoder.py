"""Two BERT-base-style encoder layers (post-LayerNorm): multi-head self-attention through
F.scaled_dot_product_attention without a mask, residual and LayerNorm, a 4x MLP with erf GELU, residual and
LayerNorm."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, EMBED, HEADS, LAYERS = 8, 512, 768, 12, 2


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(EMBED, 3 * EMBED)
        self.proj = nn.Linear(EMBED, EMBED)
        self.ln1, self.ln2 = nn.LayerNorm(EMBED), nn.LayerNorm(EMBED)
        self.fc, self.out = nn.Linear(EMBED, 4 * EMBED), nn.Linear(4 * EMBED, EMBED)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=2)
        q, k, v = (z.reshape(b, t, HEADS, e // HEADS).permute(0, 2, 1, 3) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v).permute(0, 2, 1, 3).reshape(b, t, e)
        x = self.ln1(x + self.proj(y))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(*(Layer() for _ in range(LAYERS)))

    def forward(self, x):
        return self.layers(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return []
