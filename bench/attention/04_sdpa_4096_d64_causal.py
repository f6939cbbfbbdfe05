"""Causal self-attention over 4096 positions, head dim 64."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, HEADS, QUERIES, KEYS, HEAD_DIM = 1, 16, 4096, 4096, 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(BATCH, HEADS, QUERIES, HEAD_DIM), torch.randn(BATCH, HEADS, KEYS, HEAD_DIM),
            torch.randn(BATCH, HEADS, KEYS, HEAD_DIM)]


def get_init_inputs():
    return []
