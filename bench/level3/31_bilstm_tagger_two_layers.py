"""A sequence tagger: a two-layer bidirectional LSTM over the sequence (time first), its output at every step
through a Linear to the tag scores, and log-softmax over the tags."""
import torch
import torch.nn as nn

STEPS, BATCH, FEATURES, HIDDEN, TAGS = 128, 32, 256, 256, 48


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, HIDDEN, num_layers=2, bidirectional=True)
        self.tags = nn.Linear(2 * HIDDEN, TAGS)

    def forward(self, x):
        y, _ = self.lstm(x)
        return torch.log_softmax(self.tags(y), dim=-1)


def get_inputs():
    return [torch.randn(STEPS, BATCH, FEATURES)]


def get_init_inputs():
    return []
