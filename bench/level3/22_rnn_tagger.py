"""A sequence tagger: an embedding's output (given as input) through a two-layer bidirectional Elman RNN (tanh),
then a linear layer on every step's output."""
import torch
import torch.nn as nn

BATCH, STEPS, FEATURES, HIDDEN, TAGS = 32, 256, 128, 256, 17


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(FEATURES, HIDDEN, num_layers=2, bidirectional=True, batch_first=True)
        self.tagger = nn.Linear(2 * HIDDEN, TAGS)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.tagger(out)


def get_inputs():
    return [torch.randn(BATCH, STEPS, FEATURES)]


def get_init_inputs():
    return []
