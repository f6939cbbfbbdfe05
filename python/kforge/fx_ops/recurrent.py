"""Recurrent layers (nn.RNN, nn.LSTM, nn.GRU): for each layer and direction one product of the whole input sequence
with the input weights, then the time loop as one `recurrence` node (ir/recurrence.h: PyTorch's equations, gates
i, f, g, o and r, z, n in that order in the stacked weights), which the generator runs as one persistent kernel
(codegen/emit_recurrence.cpp). Computed in f32 whatever the layer's dtype. The cells (nn.RNNCell, nn.LSTMCell,
nn.GRUCell) are one-step recurrences.

A tuple result is picked part by part (output, then h_n and c_n); the steps are emitted once, at the first part
picked. Dropout between layers in training mode is random and refused; projections (proj_size) are refused."""
import torch
import torch.nn as nn

from kforge.dtypes import FLOATS
from kforge.fx_ops.common import Multi, module_param, on_module, tensor
from kforge.fx_ops.matmul import product, transposed

F32 = torch.float32
GATES = {nn.RNN: 1, nn.LSTM: 4, nn.GRU: 3}


CELLS = {nn.LSTM: "lstm", nn.GRU: "gru"}


class Steps:
    """The layers' recurrence nodes, named after the FX node that picks the first part."""

    def __init__(self, b, m, x, hx):
        self.b, self.m = b, m
        self.qualname = b.node.target  # the module's; the nodes are emitted later, under a getitem node
        self.gates = GATES[type(m)]
        self.cell = CELLS.get(type(m)) or ("rnn_tanh" if m.nonlinearity == "tanh" else "rnn_relu")
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
        return None if t is None else self.b.cast(self.b.param(f"{self.qualname}.{name}", t.dtype, t.shape), F32)

    def initial(self, which, index, batch):
        """h0 / c0 of one (layer, direction), or None (zeros) where the call gave none."""
        H = self.m.hidden_size
        given = self.hx[which] if self.hx is not None else None
        if given is None:
            return None
        part = self.b.emit_tmp("slice", [given], {"dim": 0, "start": index, "end": index + 1, "step": 1}, given.dtype,
                               (1, *given.shape[1:]))
        part = self.b.emit_tmp("reshape", [part], {"shape": [batch, H]}, given.dtype, (batch, H))
        return self.b.cast(part, F32)

    def run(self):
        """(output [T, N, D*H] time-major, and per layer and direction a function giving its last h and one giving
        its last c (LSTM only)): the last states are made only where picked (final), so no node is left that
        nothing reads."""
        if self.results is None:
            m, seq = self.m, self.x
            if m.batch_first:
                seq = self.b.emit_tmp("permute", [seq], {"dims": [1, 0, 2]}, seq.dtype, (seq.shape[1], seq.shape[0], seq.shape[2]))
            finals_h, finals_c = [], []
            for layer in range(m.num_layers):
                seq, h_n, c_n = self.layer(seq, layer)
                finals_h += h_n
                finals_c += c_n
            self.results = (seq, finals_h, finals_c)
        return self.results

    def layer(self, seq, layer):
        """One layer: for each direction the input's share of every gate for all steps as one product, then the time
        loop of both directions as one recurrence node (ir/recurrence.h), the directions side by side in its result
        as in PyTorch's output. Returns that result and, per direction, functions making its last h and c."""
        m, H, G = self.m, self.m.hidden_size, self.gates
        T, N, I = seq.shape
        D = 2 if m.bidirectional else 1
        flat = self.b.cast(self.b.emit_tmp("reshape", [seq], {"shape": [T * N, I]}, seq.dtype, (T * N, I)), F32)
        args = []
        for direction in range(D):
            suffix = "_reverse" if direction else ""
            w_ih, w_hh = self.weight("weight_ih", layer, suffix), self.weight("weight_hh", layer, suffix)
            b_ih, b_hh = self.weight("bias_ih", layer, suffix), self.weight("bias_hh", layer, suffix)
            from_x = product(self.b, flat, transposed(self.b, w_ih), final=False)  # [T * N, G * H]
            if b_ih is not None:
                from_x = self.tmp("add", [from_x, b_ih], None, from_x.shape)
            from_x = self.tmp("reshape", [from_x], {"shape": [T, N, G * H]}, (T, N, G * H))
            index = layer * D + direction
            args += [from_x, w_hh, self.initial(0, index, N), self.initial(1, index, N) if G == 4 else None, b_hh]

        made = {}

        def loop(state):  # one node a state, both directions' last steps picked from it
            if state not in made:
                attrs = {"cell": self.cell, "reverse": False, "state": state}
                if D == 2:
                    attrs["directions"] = 2
                made[state] = self.tmp("recurrence", args, attrs, (T, N, D * H))
            return made[state]

        out = loop("h")

        def final(state, direction):
            last = 0 if direction else T - 1

            def make():
                v = self.piece(loop(state), 0, last, last + 1)
                if D == 2:
                    v = self.piece(v, 2, direction * H, (direction + 1) * H)
                return self.tmp("reshape", [v], {"shape": [N, H]}, (N, H))
            return make

        return (out, [final("h", k) for k in range(D)], [final("c", k) if G == 4 else None for k in range(D)])

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
            v = steps.stacked([make() for make in steps.run()[1 + k]])  # [L * D, N, H]
            return b.emit("reshape", [v], {"shape": list(v.shape)})
        return pick

    if isinstance(m, nn.LSTM):
        return Multi(output, lambda: Multi(final(0), final(1)))
    return Multi(output, final(0))


CELL_GATES = {nn.RNNCell: 1, nn.LSTMCell: 4, nn.GRUCell: 3}


def cell(b, m, input, hx=None):
    """One step of nn.RNNCell, nn.LSTMCell or nn.GRUCell as a one-step recurrence (a cell called in a loop over
    steps, as hand-written recurrent networks do, is one such node a call; an LSTM cell's h and c both come from
    it); an absent state is zeros."""
    x = tensor(b, input)
    if x.ndim != 2:
        b.refuse(f"unbatched {type(m).__name__} input (shape {list(x.shape)}) is not supported")
    if x.dtype not in FLOATS:
        b.refuse(f"{type(m).__name__} is supported in float32, float16 and bfloat16, got {x.dtype}")
    G, H, (N, I) = CELL_GATES[type(m)], m.hidden_size, x.shape
    lstm = isinstance(m, nn.LSTMCell)
    states = (hx if isinstance(hx, (tuple, list)) else (hx,)) if hx is not None else (None, None)

    def weight(name):  # a cell registers an absent bias as None
        p = module_param(b, m, name)
        return None if p is None else b.cast(p, F32)

    def state(v):
        return None if v is None else b.cast(tensor(b, v, "initial state"), F32)

    from_x = product(b, b.cast(x, F32), transposed(b, weight("weight_ih")), final=False)
    if (b_ih := weight("bias_ih")) is not None:
        from_x = b.emit_tmp("add", [from_x, b_ih], None, F32, from_x.shape)
    from_x = b.emit_tmp("reshape", [from_x], {"shape": [1, N, G * H]}, F32, (1, N, G * H))
    name = "lstm" if lstm else "gru" if G == 3 else "rnn_tanh" if m.nonlinearity == "tanh" else "rnn_relu"
    args = [from_x, weight("weight_hh"), state(states[0]), state(states[1]) if lstm else None, weight("bias_hh")]

    if not lstm:
        step = b.emit_tmp("recurrence", args, {"cell": name, "state": "h"}, F32, (1, N, H))
        return b.emit("reshape", [step], {"shape": [N, H]})
    made = []  # an LSTM cell's h and c from one node (state "hc": [1, N, 2H]), made at the first part picked

    def part(k):
        def make():
            if not made:
                made.append(b.emit_tmp("recurrence", args, {"cell": name, "state": "hc"}, F32, (1, N, 2 * H)))
            piece = b.emit_tmp("slice", [made[0]], {"dim": 2, "start": k * H, "end": (k + 1) * H, "step": 1}, F32, (1, N, H))
            return b.emit("reshape", [piece], {"shape": [N, H]})
        return make

    return Multi(part(0), part(1))


for _layer in GATES:
    on_module(_layer)(recurrent)
for _cell in CELL_GATES:
    on_module(_cell)(cell)
