"""A pre-LayerNorm transformer encoder built from PyTorch's own modules (nn.TransformerEncoder of two
nn.TransformerEncoderLayer, GELU, no dropout) under a causal boolean mask (is_causal given, as PyTorch advises) and a key padding mask that hides each
sequence's last positions, then a LayerNorm."""
import torch
import torch.nn as nn

BATCH, SEQ, EMBED, HEADS, FF, LAYERS, PADDED = 16, 256, 512, 8, 2048, 2, 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(EMBED, HEADS, FF, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(EMBED)
        self.register_buffer("causal", torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1))  # True: not attended
        self.register_buffer("padding", torch.arange(SEQ).expand(BATCH, SEQ) >= SEQ - PADDED)

    def forward(self, x):
        return self.norm(self.encoder(x, mask=self.causal, src_key_padding_mask=self.padding, is_causal=True))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return []
