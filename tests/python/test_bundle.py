"""The task bundle on disk: layout, raw tensors, reference outputs, input-set variants, flags, atomic writes."""
import numpy as np
import torch

from kforge import bridge
from kforge.bundle import read_inputs, read_outputs, read_params, read_task
from kforge.fx_to_ir import lookup
from kforge.problem import load_problem
from op_cases import Case


def import_case(tmp_path, case, *extra):
    source = tmp_path / f"{case.name}.py"
    source.write_text(case.source())
    out = tmp_path / f"{case.name}.bundle"
    assert bridge.main(["import", str(source), "-o", str(out), "--device", "cpu", "--no-baselines", *extra]) == 0
    return source, out


LAYER_NORM = Case("ln", "self.ln(x * self.w)", ["mul", "layer_norm"], inputs="torch.randn(64, 64)",
                  init="self.ln = nn.LayerNorm(64)\nself.w = nn.Parameter(torch.randn(64))")


def test_layout_and_task_json(tmp_path):
    source, out = import_case(tmp_path, LAYER_NORM, "--sets", "3")
    task = read_task(out)
    assert task["name"] == "ln" and task["source"] == str(source.resolve())
    assert task["num_sets"] == 3 and task["baselines"] is None and task["gpu"] == "cpu"
    assert task["tolerance"] == {"strict": 1e-4, "relaxed": 1e-2}
    assert task["torch_version"] == torch.__version__ and task["created"]
    assert sorted(p.name for p in (out / "params").iterdir()) == ["0.bin", "1.bin", "2.bin"]
    assert sorted(p.name for p in (out / "sets").iterdir()) == ["0", "1", "2"]
    assert (out / "params" / "0.bin").stat().st_size == 64 * 4  # raw f32, no header
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ln.bundle", "ln.py"]  # no temporary left


def test_params_are_the_seeded_model_and_outputs_are_its_results(tmp_path):
    source, out = import_case(tmp_path, LAYER_NORM)
    graph = read_task(out)["graph"]
    model = load_problem(source).build_model()
    params = read_params(out, graph, "cpu")
    assert [p["name"] for p in graph["params"]] == ["w", "ln.weight", "ln.bias"]
    for p, t in zip(graph["params"], params):
        assert torch.equal(lookup(model, p["name"]), t)
    wide = model.double()  # the reference is the model's arithmetic in float64, rounded once
    for k in range(5):
        with torch.no_grad():
            expected = wide(*[t.double() for t in read_inputs(out, k, graph, "cpu")]).float()
        assert torch.equal(read_outputs(out, k, graph, "cpu")[0], expected)


def test_sets_vary_the_value_range_of_float_inputs_only(tmp_path):
    case = Case("ce", "F.cross_entropy(x, t)", ["cross_entropy"], args="x, t",
                inputs="torch.randn(256, 64), torch.randint(0, 64, (256,))")
    _, out = import_case(tmp_path, case)
    graph = read_task(out)["graph"]
    logits = [read_inputs(out, k, graph, "cpu")[0] for k in range(5)]
    assert 0.9 < logits[0].std() < 1.1 and 0.09 < logits[1].std() < 0.11 and 3.6 < logits[2].std() < 4.4
    assert 0.45 < logits[3].mean() < 0.55 and 0.9 < logits[4].std() < 1.1
    assert not torch.equal(logits[0], logits[4])  # a fresh seed per set
    for k in range(5):
        targets = read_inputs(out, k, graph, "cpu")[1]
        assert targets.dtype == torch.int64 and 0 <= targets.min() and targets.max() < 64


def test_a_variant_that_overflows_falls_back_to_the_inputs_as_drawn(tmp_path):
    # Every draw holds an element of at least 0.9: x 4 gives exp(>= 90) = inf in float32 (a plain rand(64) left every
    # element below 0.887 about once in 2000 draws, and its variant stayed finite).
    _, out = import_case(tmp_path, Case("exp", "torch.exp(x * 25)", ["const", "mul", "exp"],
                                        inputs="torch.cat([torch.rand(63), torch.ones(1) * 0.95])"))
    graph = read_task(out)["graph"]
    set2 = read_inputs(out, 2, graph, "cpu")[0]
    assert set2.max() < 1 and torch.isfinite(read_outputs(out, 2, graph, "cpu")[0]).all()


def test_flags(tmp_path):
    flags = {name: read_task(import_case(tmp_path, Case(name, forward, []))[1])["flags"]
             for name, forward in (("zero", "x - x"), ("tiny", "x * 1e-5"), ("normal", "x * 2"),
                                   ("scalar", "x.mean()"))}
    assert flags["zero"] == {"constant_output": True, "near_zero_output": True}
    assert flags["tiny"] == {"constant_output": False, "near_zero_output": True}
    assert flags["normal"] == {"constant_output": False, "near_zero_output": False}
    # One number per set, but a different one on each (the sets' scales and shifts differ): not constant.
    assert flags["scalar"]["constant_output"] is False


def test_reimport_replaces_the_bundle(tmp_path):
    _, out = import_case(tmp_path, LAYER_NORM, "--sets", "4")
    (out / "stale").write_text("from the first import")
    import_case(tmp_path, LAYER_NORM, "--sets", "2")
    assert read_task(out)["num_sets"] == 2 and not (out / "stale").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ln.bundle", "ln.py"]


def test_bool_and_int_outputs_are_raw_bytes(tmp_path):
    _, out = import_case(tmp_path, Case("cmp", "return x > 0, x.argmax(1)", []))
    graph = read_task(out)["graph"]
    assert (out / "sets/0/out0.bin").stat().st_size == 32 and (out / "sets/0/out1.bin").stat().st_size == 4 * 8
    x = read_inputs(out, 0, graph, "cpu")[0]
    assert np.array_equal(np.fromfile(out / "sets/0/out0.bin", dtype=np.bool_), (x > 0).flatten().numpy())
