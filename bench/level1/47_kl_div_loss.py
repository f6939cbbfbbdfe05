"""KL divergence F.kl_div(log(p), t, reduction='batchmean') between row-softmaxed distributions."""
# eager estimate: 3.81 ms (bytes: ~11 passes of 1.21 GB (per input: log R+W, kl_div xlogy/mul/sub ~8, sum R) = 13.29 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 24576
CLASSES = 12289


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.kl_div(torch.log(predictions), targets, reduction='batchmean')


def get_inputs():
    predictions = torch.softmax(torch.randn(ROWS, CLASSES), dim=-1)
    targets = torch.softmax(torch.randn(ROWS, CLASSES), dim=-1)
    return [predictions, targets]


def get_init_inputs():
    return []
