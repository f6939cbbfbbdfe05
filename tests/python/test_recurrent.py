"""nn.RNN, nn.LSTM and nn.GRU import as a product and a recurrence a layer (kforge.fx_ops.recurrent): every part of the result
(output, h_n, c_n), batch first or not, stacked and bidirectional, with and without initial states and biases,
computed by the CPU interpreter as PyTorch computes it; what cannot be verified is refused with its reason."""
import os

import numpy as np
import pytest

from kforge import bridge
from kforge.bundle import read_task

pytestmark = pytest.mark.skipif(os.environ.get("KFORGE_NO_CORE") == "1", reason="KFORGE_NO_CORE=1")
if os.environ.get("KFORGE_NO_CORE") != "1":
    from test_interpret import interpreted_sets

HEADER = "import torch\nimport torch.nn as nn\n\n"
CASES = {
    "lstm_all_parts": ("nn.LSTM(5, 6, num_layers=2, bidirectional=True, batch_first=True)",
                       "out, (h, c) = self.rnn(x)\n        return out, h, c", "torch.randn(3, 4, 5)"),
    "lstm_given_states": ("nn.LSTM(5, 6)", "out, (h, c) = self.rnn(x, (h0, c0))\n        return out + 0, c",
                          "torch.randn(4, 3, 5), torch.randn(1, 3, 6), torch.randn(1, 3, 6)"),
    "gru_stacked": ("nn.GRU(5, 6, num_layers=3, batch_first=True)", "out, h = self.rnn(x)\n        return out, h",
                    "torch.randn(2, 4, 5)"),
    "rnn_relu_stacked_bidirectional": ("nn.RNN(5, 6, num_layers=2, nonlinearity='relu', bidirectional=True)",
                                       "out, h = self.rnn(x)\n        return out, h", "torch.randn(4, 3, 5)"),
    "gru_bidirectional_no_bias": ("nn.GRU(5, 6, bidirectional=True, bias=False)",
                                  "return self.rnn(x, h0)[1]", "torch.randn(4, 2, 5), torch.randn(2, 2, 6)"),
    # cells, and a hand-written loop over the steps calling one
    "lstm_cell_loop": ("nn.LSTMCell(5, 6)", "h, c = self.rnn(x[0])\n        for t in range(1, 4):\n"
                       "            h, c = self.rnn(x[t], (h, c))\n        return h, c", "torch.randn(4, 3, 5)"),
    "gru_cell_given_state": ("nn.GRUCell(5, 6)", "return self.rnn(x, h0)", "torch.randn(3, 5), torch.randn(3, 6)"),
    "rnn_cell_relu_no_bias": ("nn.RNNCell(5, 6, bias=False, nonlinearity='relu')", "return self.rnn(x)",
                              "torch.randn(3, 5)"),
}


def source(layer, body, inputs):
    args = "x" if inputs.count("torch.randn") == 1 else ("x, h0" if inputs.count("torch.randn") == 2 else "x, h0, c0")
    return (f"{HEADER}class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.rnn = {layer}\n\n    def forward(self, {args}):\n        {body}\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return []\n")


def imported(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    out = tmp_path / f"{name}.bundle"
    assert bridge.main(["import", str(path), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 0
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_recurrent_layers_compute_what_pytorch_does(name, tmp_path):
    bundle = imported(tmp_path, name, source(*CASES[name]))
    assert "opaque" not in [n["op"] for n in read_task(bundle)["graph"]["nodes"]]
    for k, j, got, expected in interpreted_sets(bundle):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=f"{name} set {k} output {j}")


def test_dropout_between_layers_in_training_mode_is_refused(tmp_path):
    text = source("nn.LSTM(5, 6, num_layers=2, dropout=0.5)", "return self.rnn(x)[0]", "torch.randn(4, 3, 5)")
    path = tmp_path / "dropout.py"
    path.write_text(text)
    graph = bridge.main(["import", str(path), "-o", str(tmp_path / "b"), "--device", "cpu", "--no-baselines"])
    task = read_task(tmp_path / "b") if (tmp_path / "b").exists() else None
    # random in training mode: not traced into kforge's IR (kept whole, or refused, with the reason)
    assert graph != 0 or task["importer"].get("opaque"), task


PLAIN_STATE = """import torch
import torch.nn as nn

batch_size = 4


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size):
        super().__init__()
        self.h0 = torch.randn((num_layers, batch_size, hidden_size))
        self.c0 = torch.randn((num_layers, batch_size, hidden_size))
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        self.c0 = self.c0.to(x.device)
        out, state = self.lstm(x, (self.h0, self.c0))
        return self.fc(out[:, -1, :]), state[1]


def get_inputs():
    return [torch.randn(batch_size, 7, 5)]


def get_init_inputs():
    return [5, 40, 2, 3]
"""


def test_an_initial_state_made_in_init_is_the_models_own_tensor(tmp_path):
    """A plain tensor attribute (320 elements) is a tensor of the task like a parameter, and forward's assignment
    to it while tracing leaves the model as it was."""
    bundle = imported(tmp_path, "plain_state", PLAIN_STATE)
    task = read_task(bundle)
    assert not task["importer"].get("opaque") and [p["name"] for p in task["graph"]["params"]][:2] == ["h0", "c0"]
    for k, j, got, expected in interpreted_sets(bundle):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=f"set {k} output {j}")


@pytest.mark.parametrize("layer, layers, directions", [("nn.LSTM(5, 8, num_layers=2)", 2, 1), ("nn.GRU(5, 8)", 1, 1),
                                                       ("nn.RNN(5, 8, num_layers=2, bidirectional=True)", 2, 2)])
def test_each_layer_is_a_product_and_one_persistent_kernel(layer, layers, directions, tmp_path):
    """Lowered, a layer is the product of its whole input sequence with each direction's input weights and one
    cooperative kernel running every step of both directions (codegen/emit_recurrence.cpp), however many steps,
    writing the layer's output in PyTorch's layout (no concatenation of the directions): the unrolled steps were
    two launches a step (a 3-layer, 128-step LSTM: 786 kernels, 0.07x PyTorch's speed)."""
    import json

    import kforge._core as core

    name = layer.split("(")[0].split(".")[1].lower()
    bundle = imported(tmp_path, name, source(layer, "return self.rnn(x)[0]", "torch.randn(24, 3, 5)"))
    graph = read_task(bundle)["graph"]
    assert [n["op"] for n in graph["nodes"]].count("recurrence") == layers
    assert "cat" not in [n["op"] for n in graph["nodes"]]
    plan = json.loads(core.lower(json.dumps(graph), "{}"))
    loops = [k for k in plan["kernels"] if k.get("cooperative")]
    assert len(loops) == layers
    assert [k.get("kind", "nvrtc") for k in plan["kernels"]].count("cublaslt") == layers * directions
    assert len(plan["kernels"]) <= 3 * layers * directions, [k["name"] for k in plan["kernels"]]
