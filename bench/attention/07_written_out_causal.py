"""Causal attention written out as a model does it (minGPT): scores q @ k^T scaled, a lower-triangular buffer's
zeros filled with -inf, softmax over the keys, the weights times v; 1024 positions, head dim 64."""
import math

import torch
import torch.nn as nn

BATCH, HEADS, SEQ, HEAD_DIM = 8, 16, 1024, 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

    def forward(self, q, k, v):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask == 0, float("-inf"))
        return torch.softmax(att, dim=-1) @ v


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, HEAD_DIM) for _ in range(3)]


def get_init_inputs():
    return []
