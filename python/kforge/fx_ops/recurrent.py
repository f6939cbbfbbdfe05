"""Recurrent layers (nn.RNN, nn.LSTM, nn.GRU) as their time steps, unrolled: for each layer and direction one product of the
whole input sequence with the input weights, then per step one product of the hidden state with the recurrent
weights and the gates' pointwise work, in PyTorch's equations (torch.nn.RNN / LSTM / GRU docs: tanh or relu of the
sum; gates i, f, g, o and r, z, n in that order in the stacked weights). The step's nodes are the generator's to fuse; a persistent kernel
per layer is an open question (docs/NOTES.md).

A tuple result is picked part by part (output, then h_n and c_n); the steps are emitted once, at the first part
picked. Dropout between layers in training mode is random and refused; projections (proj_size) are refused."""
import torch
import torch.nn as nn

from kforge.dtypes import FLOATS
from kforge.fx_ops.common import Multi, on_module, tensor
from kforge.fx_ops.matmul import product, transposed

F32 = torch.float32
GATES = {nn.RNN: 1, nn.LSTM: 4, nn.GRU: 3}


class Steps:
    """The unrolled layer's intermediate nodes, named after the FX node that picks the first part."""

    def __init__(self, b, m, x, hx):
        self.b, self.m = b, m
        self.qualname = b.node.target  # the module's; the steps are emitted later, under a getitem node
        self.gates = GATES[type(m)]
        self.x, self.hx = x, hx
        self.results = None

    def tmp(self, op, args, attrs, shape):
        return self.b.emit_tmp(op, args, attrs, F32, tuple(shape))

    def piece(self, v, dim, start, end):
        shape = list(v.shape)
        shape[dim] = end - start
        return self.tmp("slice", [v], {"dim": dim, "start": start, "end": end, "step": 1}, shape)

    def stacked(self, parts):  # [N, H] parts -> [len(parts), N, H]
        rows = [self.tmp("reshape", [p], {"shape": [1, *p.shape]}, (1, *p.shape)) for p in parts]
        if len(rows) == 1:
            return rows[0]
        return self.tmp("cat", rows, {"dim": 0}, (len(rows), *parts[0].shape))

    def weight(self, kind, layer, suffix):
        name = f"{kind}_l{layer}{suffix}"
        t = getattr(self.m, name, None)
        return None if t is None else self.b.param(f"{self.qualname}.{name}", t.dtype, t.shape)

    def initial(self, which, index, batch):
        """h0 / c0 of one (layer, direction), or zeros where the call gave none."""
        H = self.m.hidden_size
        given = self.hx[which] if self.hx is not None else None
        if given is None:
            return self.tmp("expand", [self.b.const(0.0, F32)], {"shape": [batch, H]}, (batch, H))
        return self.tmp("reshape", [self.piece(given, 0, index, index + 1)], {"shape": [batch, H]}, (batch, H))

    def run(self):
        """(output [T, N, D*H] time-major, each layer and direction's last h, and last c (LSTM only)): the
        last states are stacked into h_n and c_n only where picked (final), so no node is left that nothing reads."""
        if self.results is None:
            m, seq = self.m, self.x
            if m.batch_first:
                seq = self.tmp("permute", [seq], {"dims": [1, 0, 2]}, (seq.shape[1], seq.shape[0], seq.shape[2]))
            finals_h, finals_c = [], []
            for layer in range(m.num_layers):
                outs = []
                for direction in range(2 if m.bidirectional else 1):
                    h_seq, h_n, c_n = self.layer(seq, layer, direction)
                    outs.append(h_seq)
                    finals_h.append(h_n)
                    finals_c.append(c_n)
                T, N = seq.shape[0], seq.shape[1]
                seq = outs[0] if len(outs) == 1 else self.tmp("cat", outs, {"dim": 2}, (T, N, 2 * m.hidden_size))
            self.results = (seq, finals_h, finals_c)
        return self.results

    def layer(self, seq, layer, direction):
        m, H, G = self.m, self.m.hidden_size, self.gates
        T, N, I = seq.shape
        suffix = "_reverse" if direction else ""
        w_ih, w_hh = self.weight("weight_ih", layer, suffix), self.weight("weight_hh", layer, suffix)
        b_ih, b_hh = self.weight("bias_ih", layer, suffix), self.weight("bias_hh", layer, suffix)
        # The input's share of every gate, all steps at once: [T * N, I] x [I, G * H].
        flat = self.tmp("reshape", [seq], {"shape": [T * N, I]}, (T * N, I))
        from_x = product(self.b, flat, transposed(self.b, w_ih), final=False)
        if b_ih is not None:
            from_x = self.tmp("add", [from_x, b_ih], None, from_x.shape)
        index = layer * (2 if m.bidirectional else 1) + direction
        h = self.initial(0, index, N)
        c = self.initial(1, index, N) if G == 4 else None
        w_hh_t = transposed(self.b, w_hh)
        hs = [None] * T
        for t in (range(T - 1, -1, -1) if direction else range(T)):
            x_t = self.piece(from_x, 0, t * N, (t + 1) * N)  # [N, G * H]
            h_t = product(self.b, h, w_hh_t, final=False)
            if b_hh is not None:
                h_t = self.tmp("add", [h_t, b_hh], None, h_t.shape)
            if G == 4:
                h, c = self.lstm_step(x_t, h_t, c, H)
            elif G == 3:
                h = self.gru_step(x_t, h_t, h, H)
            else:
                h = self.unary("tanh" if m.nonlinearity == "tanh" else "relu", self.binary("add", x_t, h_t))
            hs[t] = h
        return self.stacked(hs), h, c

    def gate(self, v, k, H):
        return self.piece(v, 1, k * H, (k + 1) * H)

    def unary(self, op, v):
        return self.tmp(op, [v], None, v.shape)

    def binary(self, op, a, b):
        return self.tmp(op, [a, b], None, a.shape)

    def lstm_step(self, x_t, h_t, c, H):
        pre = self.binary("add", x_t, h_t)
        i, f = self.unary("sigmoid", self.gate(pre, 0, H)), self.unary("sigmoid", self.gate(pre, 1, H))
        g, o = self.unary("tanh", self.gate(pre, 2, H)), self.unary("sigmoid", self.gate(pre, 3, H))
        c = self.binary("add", self.binary("mul", f, c), self.binary("mul", i, g))
        return self.binary("mul", o, self.unary("tanh", c)), c

    def gru_step(self, x_t, h_t, h, H):
        r = self.unary("sigmoid", self.binary("add", self.gate(x_t, 0, H), self.gate(h_t, 0, H)))
        z = self.unary("sigmoid", self.binary("add", self.gate(x_t, 1, H), self.gate(h_t, 1, H)))
        n = self.unary("tanh", self.binary("add", self.gate(x_t, 2, H), self.binary("mul", r, self.gate(h_t, 2, H))))
        return self.binary("add", n, self.binary("mul", z, self.binary("sub", h, n)))  # (1 - z) * n + z * h


def recurrent(b, m, input, hx=None):
    if getattr(m, "proj_size", 0):
        b.refuse(f"{type(m).__name__} with proj_size > 0 is not supported")
    if m.dropout and m.training and m.num_layers > 1:
        b.refuse(f"{type(m).__name__} with dropout between layers in training mode is random: kforge cannot verify "
                 "it (call model.eval(), or set dropout=0)")
    x = tensor(b, input)
    if x.ndim != 3:
        b.refuse(f"unbatched {type(m).__name__} input (shape {list(x.shape)}) is not supported")
    if x.dtype not in FLOATS:
        b.refuse(f"{type(m).__name__} is supported in float32, float16 and bfloat16, got {x.dtype}")
    if hx is not None:
        hx = tuple(tensor(b, v, "initial state") for v in hx) if isinstance(hx, (tuple, list)) else (tensor(b, hx, "h0"),)
    steps = Steps(b, m, x, hx)

    def output():
        seq = steps.run()[0]
        if m.batch_first:
            return b.emit("permute", [seq], {"dims": [1, 0, 2]})
        return b.emit("reshape", [seq], {"shape": list(seq.shape)})

    def final(k):
        def pick():
            v = steps.stacked(steps.run()[1 + k])  # [L * D, N, H]
            return b.emit("reshape", [v], {"shape": list(v.shape)})
        return pick

    if isinstance(m, nn.LSTM):
        return Multi(output, lambda: Multi(final(0), final(1)))
    return Multi(output, final(0))


for _layer in GATES:
    on_module(_layer)(recurrent)
