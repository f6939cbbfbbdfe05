"""A GRU encoder-decoder with teacher forcing: the encoder's final hidden state starts the decoder, which reads the
target sequence (given as input) and predicts each next token's scores through a linear layer."""
import torch
import torch.nn as nn

BATCH, SOURCE, TARGET, FEATURES, HIDDEN, VOCAB = 16, 192, 128, 96, 192, 500


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.GRU(FEATURES, HIDDEN, batch_first=True)
        self.decoder = nn.GRU(FEATURES, HIDDEN, batch_first=True)
        self.scores = nn.Linear(HIDDEN, VOCAB)

    def forward(self, source, target):
        _, h = self.encoder(source)
        out, _ = self.decoder(target, h)
        return self.scores(out)


def get_inputs():
    return [torch.randn(BATCH, SOURCE, FEATURES), torch.randn(BATCH, TARGET, FEATURES)]


def get_init_inputs():
    return []
