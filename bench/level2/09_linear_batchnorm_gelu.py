"""Linear, BatchNorm1d with batch statistics (training mode, as KernelBench runs it), GELU."""
# eager estimate: 5.7 ms (275 GFLOP, plus column statistics and a GELU pass over 128 MB)
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
IN_FEATURES = 4096
OUT_FEATURES = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return F.gelu(self.bn(self.linear(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
