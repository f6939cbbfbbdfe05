"""kforge.synth: reproducible generation, every generated problem importable, and each filter rejecting the bad case
planted for it (CPU only, tiny shapes)."""
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kforge import fx_to_ir, synth, synth_ops
from kforge.problem import load_problem

REPO = Path(__file__).resolve().parents[2]
SMALL = ["--min-elems", "64", "--max-elems", "2048", "--no-compile-check"]


def options(out, count, seed, **kw):
    return synth.Options(count=count, seed=seed, out=out, min_elems=64, max_elems=2048, compile_check=False, **kw)


def files(folder):
    return {p.name: p.read_bytes() for p in sorted(Path(folder).glob("*.py"))}


def planted(forward, shape="8, 16", init=""):
    """A problem file whose forward is one expression of x."""
    return (f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n{init}\n"
            f"    def forward(self, x):\n        return {forward}\n\n\n"
            f"def get_inputs():\n    return [torch.randn({shape})]\n\n\ndef get_init_inputs():\n    return []\n")


def reason(path, **kw):
    with pytest.raises(synth.Rejected) as e:
        synth.evaluate(path, "cpu", 0, compile_check=kw.pop("compile_check", False), **kw)
    return e.value.reason


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """One set of 24 problems, shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("set")
    return out, synth.generate(options(out, 24, 11))


# ---- reproducibility -----------------------------------------------------------------------------------------

def test_same_seed_gives_identical_files_across_processes(tmp_path, generated):
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "PYTHONHASHSEED": "123"}
    cmd = [sys.executable, "-m", "kforge.synth", "--count", "24", "--seed", "11", "--out", str(tmp_path / "a"), *SMALL]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "wrote 24 of 24" in result.stdout
    assert files(tmp_path / "a") == files(generated[0])
    again = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert again["problems"] == generated[1]["problems"]


def test_other_seed_gives_other_files(tmp_path, generated):
    synth.generate(options(tmp_path, 24, 12))
    assert files(tmp_path) != files(generated[0])


def test_one_problem_can_be_redrawn_from_its_seed(generated):
    out, manifest = generated
    entry = manifest["problems"][3]
    spec = synth_ops.sample_problem(random.Random(entry["seed"]), 64, 2048)
    assert (out / entry["file"]).read_text() == spec.render()


# ---- what is generated ---------------------------------------------------------------------------------------

def test_every_generated_problem_loads_and_imports(generated):
    out, manifest = generated
    assert manifest["generated"] == 24 and len(manifest["problems"]) == 24
    assert sorted(files(out)) == sorted(p["file"] for p in manifest["problems"])
    for entry in manifest["problems"]:
        problem = load_problem(out / entry["file"])
        model = problem.build_model()
        inputs = problem.draw_inputs(0, "cpu")
        graph = fx_to_ir.convert(model, inputs, problem.path)
        assert [n["op"] for n in graph["nodes"]] == entry["ir_ops"]
        assert [i["shape"] for i in graph["inputs"]] == entry["input_shapes"]
        assert 64 <= inputs[0].numel() <= 2048
        assert 1 <= len(entry["chain"]) <= 5
        source = (out / entry["file"]).read_text()
        forward = source.split("def forward")[1].split("def get_inputs")[0]
        assert "rand" not in forward and "dropout" not in source.lower()
        assert source.startswith('"""') and source.splitlines()[0].endswith('"""')  # one-line docstring
    assert len({p["signature"] for p in manifest["problems"]}) == 24


def test_manifest_records_filters_and_skips(generated):
    manifest = generated[1]
    assert manifest["skipped_filters"] == ["compile", "timing"]
    m = manifest["problems"][0]["measurements"]
    assert m["compile_max_diff"] == "skipped" and m["eager_ms"] is None and m["timing"].startswith("skipped")
    assert m["spread"] > synth.CONSTANT_SPREAD and m["max_abs"] > synth.NEAR_ZERO


def test_sampler_covers_every_family_and_renders_valid_python():
    kinds = set()
    for seed in range(600):
        spec = synth_ops.sample_problem(random.Random(seed), 64, 1 << 16)
        compile(spec.render(), f"spec{seed}", "exec")
        kinds |= {op.kind for op in spec.ops}
        shape = spec.shape
        for op in spec.ops:  # the shape is threaded through the chain; only the last op may end it
            assert op is spec.ops[-1] or not op.terminal
            shape = op.out.shape
        assert 64 <= torch.Size(spec.shape).numel() <= 1 << 16 and len(shape) <= 5
    expected = {"relu", "leaky_relu", "elu", "hardtanh", "softplus", "add_scalar", "mul_scalar", "sum", "mean",
                "amax", "amin", "argmax", "argmin", "softmax", "log_softmax", "layer_norm", "batch_norm",
                "group_norm", "instance_norm", "rms_norm", "lp_normalize", "cumsum", "cumprod", "reverse_cumsum",
                "max_pool", "avg_pool", "mse_loss", "huber_loss", "smooth_l1_loss", "kl_div", "cross_entropy",
                "hinge_loss", "triplet_margin_loss", "cosine_loss", "log", "sqrt", "linear", "conv"}
    assert expected <= kinds


# ---- filters on planted bad cases ----------------------------------------------------------------------------

@pytest.mark.parametrize("forward, shape, why", [
    ("torch.softmax(x, dim=1)", "8, 1", "constant_output"),      # softmax over a size-1 dim: all ones
    ("F.mse_loss(x, x)", "8, 16", "constant_output"),             # a scalar that never moves with the inputs
    ("x * 1e-6", "8, 16", "near_zero_output"),
    ("x + torch.rand_like(x)", "8, 16", "nondeterministic"),
    ("torch.sort(x, dim=1)[0]", "8, 16", "importer"),              # runs, but kforge's IR has no sort
    ("torch.log(x)", "8, 16", "nonfinite"),                       # log of negative values
    ("x + torch.ones(3)", "8, 16", "eager_error"),
])
def test_filters_reject_planted_cases(write_problem, forward, shape, why):
    assert reason(write_problem(planted(forward, shape))) == why


def test_exact_and_near_duplicates_of_an_excluded_problem_are_rejected(tmp_path, write_problem):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "relu.py").write_text(planted("torch.relu(x)", "16, 1000"))
    (tmp_path / "bench" / "notes.py").write_text("x = 1\n")  # not a problem: skipped, not fatal
    excluded, skipped = synth.exclude_signatures([tmp_path / "bench"])
    assert len(excluded) == 1 and skipped == [str(tmp_path / "bench" / "notes.py")]
    assert reason(write_problem(planted("torch.relu(x)", "16, 1000"), "same"), excluded=excluded) == "excluded"
    assert reason(write_problem(planted("torch.relu(x)", "15, 1023"), "near"), excluded=excluded) == "excluded"
    graph, sig, _ = synth.evaluate(write_problem(planted("torch.tanh(x)", "16, 1000"), "other"), "cpu", 0,
                                   excluded=excluded, compile_check=False)
    assert reason(write_problem(planted("torch.tanh(x)", "16, 1000"), "again"), seen={sig: "other.py"}) == "duplicate"


def test_excluded_signatures_of_the_benchmark(tmp_path):
    excluded, skipped = synth.exclude_signatures([REPO / "bench" / "level1"])
    assert skipped == [] and len(excluded) > 40


def test_manifest_counts_rejections(tmp_path):
    first = synth.generate(options(tmp_path / "first", 2, 7))
    (tmp_path / "exclude").mkdir()
    shutil.copy(tmp_path / "first" / first["problems"][0]["file"], tmp_path / "exclude")
    second = synth.generate(options(tmp_path / "second", 2, 7, exclude=[tmp_path / "exclude"]))
    assert second["excluded_signatures"] == 1
    assert second["rejected"].get("excluded") == 1 and "excluded" in second["rejected_examples"]
    assert second["attempts"] == second["generated"] + sum(second["rejected"].values())
    assert first["problems"][0]["signature"] not in {p["signature"] for p in second["problems"]}
    assert len(files(tmp_path / "second")) == 2  # rejected candidates leave no file behind


def test_compile_check_runs_inductor_on_a_tiny_chain(write_problem):
    path = write_problem(planted("torch.softmax(F.leaky_relu(x, 0.1) * 2.0, dim=-1)", "4, 8"))
    _, _, measured = synth.evaluate(path, "cpu", 0, compile_check=True)
    assert isinstance(measured["compile_max_diff"], float) and measured["compile_max_diff"] <= 1e-4


def test_compile_filter_rejects_mismatch_and_error(write_problem, monkeypatch):
    path = write_problem(planted("torch.tanh(x)"))
    monkeypatch.setattr(torch, "compile", lambda model: (lambda *a: model(*a) + 1e-3))
    assert reason(path, compile_check=True) == "compile_mismatch"

    def broken(model):
        raise RuntimeError("inductor failed")
    monkeypatch.setattr(torch, "compile", broken)
    assert reason(path, compile_check=True) == "compile_error"


def test_timing_filter_bounds_eager_time_on_cuda(monkeypatch):
    monkeypatch.setattr(synth.timing, "time_callable", lambda fn: {"mean_ms": 0.5})
    model, inputs = torch.nn.ReLU(), [torch.randn(4)]
    assert synth.check_timing(model, inputs, "cpu", 1.0, 2.0)["timing"] == "skipped: device is cpu"
    assert synth.check_timing(model, inputs, "cuda", 0.1, 2.0)["eager_ms"] == 0.5
    for lo, hi, why in ((1.0, 2.0, "too_fast"), (0.1, 0.2, "too_slow")):
        with pytest.raises(synth.Rejected) as e:
            synth.check_timing(model, inputs, "cuda", lo, hi)
        assert e.value.reason == why


def test_signature_buckets_shapes_and_rounds_parameters():
    def graph(slope, shape):
        return {"inputs": [{"name": "x", "dtype": "f32", "shape": shape}],
                "nodes": [{"name": "a", "op": "leaky_relu", "args": ["x"], "attrs": {"negative_slope": slope}}]}
    assert synth.signature(graph(0.05, [16, 2047])) == synth.signature(graph(0.0501, [16, 2100]))
    assert synth.signature(graph(0.05, [16, 2047])) != synth.signature(graph(0.2, [16, 2047]))
    assert synth.signature(graph(0.05, [16, 2047])) != synth.signature(graph(0.05, [16, 4096]))
