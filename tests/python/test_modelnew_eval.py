"""ModelNew candidates (the KernelBench solution format) through the environment, on the CPU: the honest one
passes, and wrong answers, in-place edits, other parameters, a missing ModelNew and (under CUDA-Agent's rules)
torch operators in forward are rejected with their reason. Timing needs a GPU and is not exercised here."""
import subprocess
import sys

import pytest

from kforge.modelnew_eval import evaluate_modelnew

PROBLEM = """import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
    def forward(self, x):
        return torch.relu(self.norm(x))
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return [16]
"""

CANDIDATES = {
    "honest": "torch.relu(self.norm(x))",
    "wrong": "self.norm(x)",
    "in_place": "x.copy_(torch.relu(self.norm(x))) if True else x",
}


def candidate(tmp_path, name, body, param_name="norm"):
    path = tmp_path / f"{name}.py"
    path.write_text(f"""import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.{param_name} = nn.LayerNorm(d)
    def forward(self, x):
        self.norm = self.{param_name}
        return {body}
""")
    return path


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("mn")
    (d / "p.py").write_text(PROBLEM)
    r = subprocess.run([sys.executable, "-m", "kforge.bridge", "import", str(d / "p.py"), "-o", str(d / "b"),
                        "--device", "cpu", "--no-baselines"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return d / "b"


def test_the_honest_candidate_passes(bundle, tmp_path):
    r = evaluate_modelnew(bundle, candidate(tmp_path, "honest", CANDIDATES["honest"]), device="cpu")
    assert r["tier"] == "strict", r["log"]


def test_torch_operators_are_refused_under_cuda_agent_rules(bundle, tmp_path):
    r = evaluate_modelnew(bundle, candidate(tmp_path, "honest", CANDIDATES["honest"]), rules="cuda-agent", device="cpu")
    assert r["tier"] == "failed" and "torch operator" in r["log"], r["log"]


def test_a_wrong_answer_is_refused(bundle, tmp_path):
    r = evaluate_modelnew(bundle, candidate(tmp_path, "wrong", CANDIDATES["wrong"]), device="cpu")
    assert r["tier"] == "failed" and "outside the relaxed tier" in r["log"], r["log"]


def test_an_in_place_edit_is_refused(bundle, tmp_path):
    r = evaluate_modelnew(bundle, candidate(tmp_path, "in_place", CANDIDATES["in_place"]), device="cpu")
    assert r["tier"] == "failed" and "in-place edit" in r["log"], r["log"]


def test_other_parameters_and_no_model_new_are_refused(bundle, tmp_path):
    r = evaluate_modelnew(bundle, candidate(tmp_path, "renamed", CANDIDATES["honest"], param_name="ln"), device="cpu")
    assert not r["compiled"] and "does not build" in r["log"] and "state_dict" in r["log"], r["log"]
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    r = evaluate_modelnew(bundle, empty, device="cpu")
    assert "defines no ModelNew" in r["log"]
