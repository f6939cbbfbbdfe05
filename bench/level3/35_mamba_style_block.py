"""A Mamba-style gated block: an input projection split into a stream and a gate, a causal depthwise 1-D
convolution over time (padded, then cut back to the sequence) with SiLU, an input-dependent decay applied as a
linear recurrence written with cumulative sums (h_t = a_t h_(t-1) + x_t in log space, chunk-free), the gate's SiLU,
and an output projection with a residual, after RMS-style normalisation."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, DIM, INNER, KERNEL = 24, 512, 512, 1024, 4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(DIM))
        self.inp = nn.Linear(DIM, 2 * INNER)
        self.conv = nn.Conv1d(INNER, INNER, KERNEL, groups=INNER, padding=KERNEL - 1)
        self.decay = nn.Linear(INNER, INNER)
        self.outp = nn.Linear(INNER, DIM)

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm_weight
        u, gate = self.inp(y).chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :SEQ]).transpose(1, 2)
        log_a = -F.softplus(self.decay(u))  # log of a decay in (0, 1)
        cum = torch.cumsum(log_a, dim=1)
        h = torch.exp(cum) * torch.cumsum(u * torch.exp(-cum.clamp(min=-20.0)), dim=1)
        return x + self.outp(h * F.silu(gate))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return []
