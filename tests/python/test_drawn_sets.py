"""Sets drawn for a batch of evaluations (kforge.drawn_sets), on the CPU: a fresh draw of get_inputs with its
references computed as at import from the bundle's own weights, sets beyond get_inputs' distribution where the
reference stays finite and the model accepts them (and named where not), and references readable by their owner
only."""
import json
import stat

import numpy as np
import torch

from kforge import bridge
from kforge.bundle import read_inputs, read_params, read_task
from kforge.drawn_sets import beyond_sets, draw
from kforge.fx_to_ir import lookup
from kforge.problem import load_problem

LINEAR = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)
    def forward(self, x):
        return torch.relu(self.fc(x))
def get_inputs():
    return [torch.rand(4, 16)]
def get_init_inputs():
    return []
"""


def imported(tmp_path, source, name="p"):
    (tmp_path / f"{name}.py").write_text(source)
    out = tmp_path / f"{name}_bundle"
    assert bridge.main(["import", str(tmp_path / f"{name}.py"), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 0
    return out


def tensor(path, like):
    return torch.from_numpy(np.fromfile(path, dtype=np.float32)).reshape(like)


def test_a_fresh_draw_with_references_from_the_bundles_own_weights(tmp_path):
    bundle = imported(tmp_path, LINEAR)
    task = read_task(bundle)
    # Weights other than the problem's seed would give: the references must follow what the bundle holds.
    (bundle / "params" / "0.bin").write_bytes(np.full((8, 16), 0.5, dtype=np.float32).tobytes())
    listing = draw(bundle, tmp_path / "drawn", device="cpu")
    fresh = [s for s in listing["sets"] if not s["beyond"]]
    assert len(fresh) == 1 and fresh[0]["strict"][0] >= 1e-4
    x = tensor(tmp_path / "drawn" / "0" / "in0.bin", (4, 16))
    assert not torch.equal(x, read_inputs(bundle, 0, task["graph"], "cpu")[0]), "a new draw, not the stored one"
    model = load_problem(bundle / "problem.py").build_model()
    with torch.no_grad():
        for spec, value in zip(task["graph"]["params"], read_params(bundle, task["graph"], "cpu")):
            lookup(model, spec["name"]).copy_(value)
    want = bridge.reference_outputs(model, [x])[0][0]
    assert torch.allclose(tensor(tmp_path / "drawn" / "0" / "out0.bin", (4, 8)), want, atol=1e-6)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "drawn" / "0").iterdir()}
    assert modes == {"in0.bin": 0o644, "out0.bin": 0o600}, modes
    assert stat.S_IMODE((tmp_path / "drawn" / "sets.json").stat().st_mode) == 0o600


def test_sets_beyond_the_distribution_move_every_float_input(tmp_path):
    bundle = imported(tmp_path, LINEAR)
    listing = draw(bundle, tmp_path / "drawn", device="cpu")
    beyond = [s for s in listing["sets"] if s["beyond"]]
    assert [s["how"] for s in beyond] == ["signs flipped", "shifted and scaled (3x - 1), a few zeros"], listing
    fresh = tensor(tmp_path / "drawn" / "0" / "in0.bin", (4, 16))
    assert torch.equal(tensor(tmp_path / "drawn" / beyond[0]["dir"] / "in0.bin", (4, 16)), -fresh)
    moved = tensor(tmp_path / "drawn" / beyond[1]["dir"] / "in0.bin", (4, 16))
    assert moved.min() < 0 < moved.max(), "uniform [0, 1) draws become both signs"
    assert json.loads((tmp_path / "drawn" / "sets.json").read_text())["skipped"] == []


def test_transforms_the_model_refuses_or_where_its_reference_is_not_finite_are_named_and_left_out(tmp_path):
    class ProbabilitiesOnly(torch.nn.Module):  # as binary_cross_entropy does outside [0, 1]
        def forward(self, p):
            if p.min() < 0:
                raise ValueError("all elements of input should be between 0 and 1")
            return p * 2

    kept, skipped = beyond_sets(ProbabilitiesOnly(), [torch.rand(64)], seed=7)
    assert kept == [] and all("the model refuses them: ValueError" in why for _, why in skipped), skipped
    sqrt = imported(tmp_path, """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sqrt(x)
def get_inputs():
    return [torch.rand(32)]
def get_init_inputs():
    return []
""", "sqrt")
    listing = draw(sqrt, tmp_path / "sqrt_drawn", device="cpu")
    assert [s["beyond"] for s in listing["sets"]] == [False]
    assert {s["why"] for s in listing["skipped"]} == {"the reference is not finite there"}, listing


def test_integer_inputs_are_left_as_drawn(tmp_path):
    bundle = imported(tmp_path, """import torch
class Model(torch.nn.Module):
    def forward(self, idx):
        return idx * 2
def get_inputs():
    return [torch.randint(0, 10, (16,))]
def get_init_inputs():
    return []
""", "ints")
    listing = draw(bundle, tmp_path / "drawn", device="cpu")
    assert [s["beyond"] for s in listing["sets"]] == [False]
    assert listing["skipped"] == [{"how": "every transform", "why": "no floating-point input to move"}]
