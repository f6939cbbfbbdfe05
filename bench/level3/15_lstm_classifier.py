"""A stacked LSTM over a sequence, classified from its last step (a sequence model's usual head): three layers of
256, batch first, 128 steps; the output of the last step through a linear layer."""
import torch
import torch.nn as nn

BATCH, STEPS, FEATURES, HIDDEN, CLASSES = 16, 128, 64, 256, 10


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, HIDDEN, num_layers=3, batch_first=True)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1, :])


def get_inputs():
    return [torch.randn(BATCH, STEPS, FEATURES)]


def get_init_inputs():
    return []
