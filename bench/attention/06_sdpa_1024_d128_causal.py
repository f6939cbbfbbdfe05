"""Causal self-attention over 1024 positions, head dim 128."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, HEADS, QUERIES, KEYS, HEAD_DIM = 4, 16, 1024, 1024, 128


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
