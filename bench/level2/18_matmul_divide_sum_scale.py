"""A weight product without bias, divided by 2, summed over the features, scaled."""
# eager estimate: 2.8 ms (137 GFLOP, plus a reduction over 64 MB)
import torch
import torch.nn as nn

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x):
        x = self.linear(x) / 2.0
        return torch.sum(x, dim=1, keepdim=True) * 1.5


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
