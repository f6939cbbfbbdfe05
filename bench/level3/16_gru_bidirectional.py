"""A bidirectional GRU encoder returning its final hidden states (h_n of both directions and both layers), with
initial states given: two layers of 128, sequence first, 384 steps."""
import torch
import torch.nn as nn

STEPS, BATCH, FEATURES, HIDDEN = 384, 32, 48, 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEATURES, HIDDEN, num_layers=2, bidirectional=True)

    def forward(self, x, h0):
        _, h_n = self.gru(x, h0)
        return h_n


def get_inputs():
    return [torch.randn(STEPS, BATCH, FEATURES), torch.randn(4, BATCH, HIDDEN)]


def get_init_inputs():
    return []
