"""The eager side of elementwise_bw.cu: torch.relu and a device-to-device copy on the same N floats, timed with
kforge's kb protocol (256 MB L2 flush per trial, CUDA events, median of 20).

    PYTHONPATH=python python3 tools/microbench/torch_elementwise.py [N]"""
import sys

import torch

from kforge import timing

n = int(sys.argv[1]) if len(sys.argv) > 1 else 49152 * 16384
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
for name, fn in {"torch.relu (allocating)": lambda: torch.relu(x), "torch.clamp_min(out=)": lambda: torch.clamp_min(x, 0.0, out=y),
                 "y.copy_(x)": lambda: y.copy_(x), "torch.sigmoid": lambda: torch.sigmoid(x)}.items():
    ms = timing.time_callable(fn)["median_ms"]
    print(f"| {name} | {ms:.4f} | {2 * n * 4 / ms / 1e6:.0f} |")
