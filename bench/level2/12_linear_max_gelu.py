"""Linear, the max over the features (keepdim), GELU, broadcast back as a residual."""
# eager estimate: 2.8 ms (137 GFLOP, plus two passes over 64 MB)
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = self.linear(x)
        m = torch.max(y, dim=1, keepdim=True).values
        return y - F.gelu(m)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
