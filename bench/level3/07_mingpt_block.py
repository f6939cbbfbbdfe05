"""A minGPT transformer block: LayerNorm, causal self-attention written out (q, k, v from one projection, a
triangular mask filled with -inf, softmax, the weighted sum, the output projection), a residual, then LayerNorm and
a GELU MLP with another residual."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, EMBED, HEADS = 48, 256, 512, 8


class CausalSelfAttention(nn.Module):
    def __init__(self, embed, heads, max_len):
        super().__init__()
        self.c_attn = nn.Linear(embed, 3 * embed)
        self.c_proj = nn.Linear(embed, embed)
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Model(nn.Module):
    def __init__(self, embed, heads, max_len):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed)
        self.attn = CausalSelfAttention(embed, heads, max_len)
        self.ln_2 = nn.LayerNorm(embed)
        self.fc = nn.Linear(embed, 4 * embed)
        self.proj = nn.Linear(4 * embed, embed)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, HEADS, SEQ]
