"""Triplet margin loss (nn.TripletMarginLoss, p=2, constructor-given margin) over embedding batches."""
# eager estimate: 3.68 ms (bytes: ~12 passes of 1.07 GB (per input: 2 x (sub 2R+W, add R+W, norm R)) = 12.88 GB, at ~3.5 TB/s)
import torch
import torch.nn as nn

BATCH = 131072
DIM = 2047
MARGIN = 0.7


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.loss = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss(anchor, positive, negative)


def get_inputs():
    anchor = torch.randn(BATCH, DIM)
    positive = torch.randn(BATCH, DIM)
    negative = torch.randn(BATCH, DIM)
    return [anchor, positive, negative]


def get_init_inputs():
    return [MARGIN]
