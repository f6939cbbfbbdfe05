"""ModelNew candidates (the KernelBench solution format) through the environment, on the CPU: the honest one
passes, and wrong answers, in-place edits, other parameters, a missing ModelNew, (under CUDA-Agent's rules)
torch operators in forward, results cached by address, patched timers and lazy outputs are rejected with their
reason. Timing (and with it work escaping the timed stream) needs a GPU: the last test runs only there."""
import subprocess
import sys

import pytest
import torch

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


def candidate(tmp_path, name, body, param_name="norm", prelude=""):
    path = tmp_path / f"{name}.py"
    path.write_text(f"""import torch
import torch.nn as nn
{prelude}
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


# Keyed by address, each input kept alive so that no address comes back for other data: right on every hidden
# set at first sight, stale once the timed tensors hold new values.
CACHE = """_cache = {}
def cached(x, compute):
    if x.data_ptr() not in _cache:
        _cache[x.data_ptr()] = (x, compute())
    return _cache[x.data_ptr()][1].clone()
"""


def test_results_cached_by_address_are_refused(bundle, tmp_path):
    path = candidate(tmp_path, "cache", "cached(x, lambda: torch.relu(self.norm(x)))", prelude=CACHE)
    r = evaluate_modelnew(bundle, path, device="cpu")
    assert r["tier"] == "failed" and "wrong after timing" in r["log"], r["log"]


def test_a_patched_timer_is_refused(bundle, tmp_path):
    saved = torch.cuda.Event.elapsed_time
    try:
        path = candidate(tmp_path, "timer", CANDIDATES["honest"],
                         prelude="torch.cuda.Event.elapsed_time = lambda self, end: 1e-6")
        r = evaluate_modelnew(bundle, path, device="cpu")
    finally:
        torch.cuda.Event.elapsed_time = saved
    assert r["tier"] == "failed" and "torch.cuda.Event.elapsed_time" in r["log"] and "timer patching" in r["log"], r["log"]


def test_a_lazy_output_is_refused(bundle, tmp_path):
    prelude = "class Lazy(torch.Tensor):\n    pass"
    r = evaluate_modelnew(bundle, candidate(tmp_path, "lazy", "torch.relu(self.norm(x)).as_subclass(Lazy)", prelude=prelude),
                          device="cpu")
    assert r["tier"] == "failed" and "not a plain torch.Tensor" in r["log"], r["log"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: timing")
def test_work_on_another_stream_is_refused(tmp_path):
    d = tmp_path / "gpu"
    d.mkdir()
    (d / "p.py").write_text(PROBLEM.replace("torch.randn(8, 16)", "torch.randn(4096, 1024)").replace("return [16]", "return [1024]"))
    r = subprocess.run([sys.executable, "-m", "kforge.bridge", "import", str(d / "p.py"), "-o", str(d / "b"),
                        "--no-baselines"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # The answer is computed on a side stream after a long spin there, and the current stream is not told to
    # wait: the kb timer's events see almost nothing; the synchronized check below them sees the spin.
    prelude = """side = torch.cuda.Stream()
def elsewhere(x, compute):
    out = torch.empty_like(x)
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)
        out.copy_(compute())
    return out
"""
    honest = evaluate_modelnew(d / "b", candidate(tmp_path, "honest_gpu", CANDIDATES["honest"]))
    assert honest["tier"] == "strict", honest["log"]
    r = evaluate_modelnew(d / "b", candidate(tmp_path, "elsewhere", "elsewhere(x, lambda: torch.relu(self.norm(x)))",
                                             prelude=prelude))
    assert r["tier"] == "failed" and "escaped the timed stream" in r["log"], r["log"]


def test_outputs_may_be_parameters_but_not_other_subclasses():
    from kforge.modelnew_eval import Rejected, check_outputs
    check_outputs([torch.zeros(2), torch.nn.Parameter(torch.zeros(2))])

    class Lazy(torch.Tensor):
        pass
    with pytest.raises(Rejected, match="not a plain torch.Tensor"):
        check_outputs([torch.zeros(2).as_subclass(Lazy)])


def test_loosened_tolerances_are_refused(bundle, tmp_path):
    from kforge.bridge import TOLERANCE
    saved = dict(TOLERANCE)
    try:
        # Off by 1e-3: relaxed only, so it reaches the check of the trusted objects (the sets' tolerances were read
        # before the candidate loaded, so loosening TOLERANCE no longer loosens the checks; it is still refused).
        path = candidate(tmp_path, "loose", "torch.relu(self.norm(x)) + 1e-3",
                         prelude="from kforge.bridge import TOLERANCE\nTOLERANCE['strict'] = TOLERANCE['relaxed'] = 1e9")
        r = evaluate_modelnew(bundle, path, device="cpu")
    finally:
        TOLERANCE.update(saved)
    assert r["tier"] == "failed" and "tolerances" in r["log"], r["log"]
