"""Two pre-LayerNorm transformer decoder layers: causal self-attention, cross-attention from the sequence to an
encoder's memory (queries from x, keys and values from the memory), and a 4x ReLU MLP, each with a residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, MEMORY, EMBED, HEADS, LAYERS = 24, 256, 512, 512, 8, 2


def heads(z):
    b, t, e = z.shape
    return z.view(b, t, HEADS, e // HEADS).transpose(1, 2)


def merge(z):
    b, h, t, d = z.shape
    return z.transpose(1, 2).reshape(b, t, h * d)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(EMBED), nn.LayerNorm(EMBED), nn.LayerNorm(EMBED)
        self.qkv, self.proj1 = nn.Linear(EMBED, 3 * EMBED), nn.Linear(EMBED, EMBED)
        self.q, self.kv, self.proj2 = nn.Linear(EMBED, EMBED), nn.Linear(EMBED, 2 * EMBED), nn.Linear(EMBED, EMBED)
        self.fc, self.out = nn.Linear(EMBED, 4 * EMBED), nn.Linear(4 * EMBED, EMBED)

    def forward(self, x, memory):
        q, k, v = self.qkv(self.ln1(x)).split(EMBED, dim=2)
        x = x + self.proj1(merge(F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)))
        k, v = self.kv(memory).split(EMBED, dim=2)
        x = x + self.proj2(merge(F.scaled_dot_product_attention(heads(self.q(self.ln2(x))), heads(k), heads(v))))
        return x + self.out(torch.relu(self.fc(self.ln3(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))

    def forward(self, x, memory):
        for layer in self.layers:
            x = layer(x, memory)
        return x


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED), torch.randn(BATCH, MEMORY, EMBED)]


def get_init_inputs():
    return []
