"""A hand-written Elman RNN run over the sequence with a Python loop whose length is the input's own (x.size(1)),
the hidden state carried through tanh(x_t W + h U + b), and a linear readout of the last state."""
import torch
import torch.nn as nn

BATCH, STEPS, INPUT, HIDDEN = 32, 48, 128, 256


class Model(nn.Module):
    def __init__(self, inputs, hidden, outputs):
        super().__init__()
        self.x2h = nn.Linear(inputs, hidden)
        self.h2h = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, outputs)
        self.hidden = hidden

    def forward(self, x):
        h = torch.zeros(x.size(0), self.hidden, device=x.device)
        for t in range(x.size(1)):
            h = torch.tanh(self.x2h(x[:, t]) + self.h2h(h))
        return self.out(h)


def get_inputs():
    return [torch.randn(BATCH, STEPS, INPUT)]


def get_init_inputs():
    return [INPUT, HIDDEN, 10]
