"""A GRU sequence-to-sequence model with dot-product attention (Luong): a GRU encodes the source, a GRU decodes the
target (teacher forcing) from the encoder's last state, each decoder step attends over the encoder's outputs
(softmax of dot products, weighted sum), and a Linear maps [decoder state, context] to the vocabulary scores."""
import torch
import torch.nn as nn

SOURCE, TARGET, BATCH, FEATURES, HIDDEN, VOCAB = 64, 48, 64, 256, 512, 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.GRU(FEATURES, HIDDEN, batch_first=True)
        self.decoder = nn.GRU(FEATURES, HIDDEN, batch_first=True)
        self.out = nn.Linear(2 * HIDDEN, VOCAB)

    def forward(self, source, target):
        memory, h = self.encoder(source)
        states, _ = self.decoder(target, h)
        weights = torch.softmax(states @ memory.transpose(1, 2), dim=-1)
        return self.out(torch.cat([states, weights @ memory], dim=-1))


def get_inputs():
    return [torch.randn(BATCH, SOURCE, FEATURES), torch.randn(BATCH, TARGET, FEATURES)]


def get_init_inputs():
    return []
