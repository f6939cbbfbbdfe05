"""ReLU over a 16 MB activation matrix: a task at the scale of KernelBench's level 1 (its kernels run in
microseconds), for measuring what the service itself costs per candidate (scripts/service_bench.sh).
bench/level1/01_relu.py is the same op resized to milliseconds, where the data dominates instead."""
import torch
import torch.nn as nn

ROWS = 256
COLS = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
