"""A sequence decoder written by hand around an LSTM cell, as attention-free seq2seq decoders are: a loop over the
target steps, each step's input its own embedding row plus a projection of the last output, the cell's hidden state
scored against the vocabulary at every step."""
import torch
import torch.nn as nn

BATCH, STEPS, EMBED, HIDDEN, VOCAB = 32, 40, 128, 256, 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(EMBED, HIDDEN)
        self.feedback = nn.Linear(HIDDEN, EMBED)
        self.scores = nn.Linear(HIDDEN, VOCAB)

    def forward(self, targets, h, c):
        outputs = []
        for t in range(STEPS):
            step_input = targets[:, t, :] + self.feedback(h)
            h, c = self.cell(step_input, (h, c))
            outputs.append(self.scores(h))
        return torch.stack(outputs, dim=1)


def get_inputs():
    return [torch.randn(BATCH, STEPS, EMBED), torch.randn(BATCH, HIDDEN), torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return []
