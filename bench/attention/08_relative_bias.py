"""Attention with an additive learned bias over (query, key) pairs, shared by every head and batch (a relative
position bias, as Swin and T5 add one): softmax(q k^T / sqrt(d) + bias) v; 1024 positions, head dim 64."""
import math

import torch
import torch.nn as nn

BATCH, HEADS, SEQ, HEAD_DIM = 8, 12, 1024, 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(SEQ, SEQ) * 0.5)

    def forward(self, q, k, v):
        att = q @ k.transpose(-2, -1) / math.sqrt(HEAD_DIM) + self.bias
        return torch.softmax(att, dim=-1) @ v


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, HEAD_DIM) for _ in range(3)]


def get_init_inputs():
    return []
