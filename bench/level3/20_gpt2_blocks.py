"""Two GPT-2-style decoder blocks: pre-LayerNorm causal self-attention (F.scaled_dot_product_attention with
is_causal), a 4x MLP with tanh-approximated GELU, residual connections, and the final LayerNorm."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, EMBED, HEADS, LAYERS = 8, 512, 768, 12, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(EMBED), nn.LayerNorm(EMBED)
        self.qkv = nn.Linear(EMBED, 3 * EMBED)
        self.proj = nn.Linear(EMBED, EMBED)
        self.fc, self.out = nn.Linear(EMBED, 4 * EMBED), nn.Linear(4 * EMBED, EMBED)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(EMBED, dim=2)
        q, k, v = (z.view(b, t, HEADS, e // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, e))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.ln = nn.LayerNorm(EMBED)

    def forward(self, x):
        return self.ln(self.blocks(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return []
