"""Linear, sigmoid, scale, and the linear output added back (a gated residual)."""
# eager estimate: 2.8 ms (137 GFLOP, plus a pass over 64 MB)
import torch
import torch.nn as nn

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = self.linear(x)
        return torch.sigmoid(y) * 0.5 + y


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
