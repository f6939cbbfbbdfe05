"""ModelNew candidates (the KernelBench solution format) through `kforge evaluate --modelnew` on the CPU: the
candidate runs in a sandboxed process of its own that never sees a reference, and the trusted judge decides. The
honest one passes; wrong answers, in-place edits, other parameters, a missing ModelNew, (under CUDA-Agent's rules)
torch operators in forward, results cached by address, patched timers, lazy outputs, reading the stored answers and
writing its own verdict are rejected with their reason; a candidate right only on get_inputs' distribution gets
that verdict. Timing (and with it work escaping the timed stream) needs a GPU: that test runs only there."""
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kforge.modelnew_eval import evaluate_modelnew, kforge_binary

pytestmark = pytest.mark.skipif(not Path(kforge_binary()).exists(), reason="the kforge binary is not built")

# The candidate runs as this user: these tests are about the judge, and the sandbox's own tests cover the drop
# to another user (this machine's Python may live where that user cannot read).
USER = pwd.getpwuid(os.getuid()).pw_name

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


def imported(d, source, device="cpu"):
    """A bundle of `source`, and its sets drawn once for this module's evaluations (a batch)."""
    d.mkdir(exist_ok=True)
    (d / "p.py").write_text(source)
    r = subprocess.run([sys.executable, "-m", "kforge.bridge", "import", str(d / "p.py"), "-o", str(d / "b"),
                        "--device", device, "--no-baselines"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([kforge_binary(), "draw-sets", str(d / "b"), "-o", str(d / "drawn"), "--device", device],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return d / "b", d / "drawn"


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return imported(tmp_path_factory.mktemp("mn"), PROBLEM)


def judged(task, path, **kw):
    bundle, drawn = task
    return evaluate_modelnew(bundle, path, device=kw.pop("device", "cpu"), drawn=drawn, sandbox_user=USER, **kw)


def test_the_honest_candidate_passes(task, tmp_path):
    r = judged(task, candidate(tmp_path, "honest", CANDIDATES["honest"]))
    assert r["tier"] == "strict", r["log"]
    assert r["distribution"]["verdict"] == "correct beyond get_inputs' distribution", r
    assert "checked only (not timed)" in r["log"] and r["reward"] == 0


def test_torch_operators_are_refused_under_cuda_agent_rules(task, tmp_path):
    r = judged(task, candidate(tmp_path, "honest", CANDIDATES["honest"]), rules="cuda-agent")
    assert r["tier"] == "failed" and "torch operator" in r["log"], r["log"]


def test_a_wrong_answer_is_refused(task, tmp_path):
    r = judged(task, candidate(tmp_path, "wrong", CANDIDATES["wrong"]))
    assert r["tier"] == "failed" and "set 0: relu: " in r["log"] and "outside 0.01" in r["log"], r["log"]


def test_an_in_place_edit_is_refused(task, tmp_path):
    r = judged(task, candidate(tmp_path, "in_place", CANDIDATES["in_place"]))
    assert r["tier"] == "failed" and "in-place edit" in r["log"], r["log"]


def test_other_parameters_and_no_model_new_are_refused(task, tmp_path):
    r = judged(task, candidate(tmp_path, "renamed", CANDIDATES["honest"], param_name="ln"))
    assert not r["compiled"] and "does not build" in r["log"] and "state_dict" in r["log"], r["log"]
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    r = judged(task, empty)
    assert "defines no ModelNew" in r["log"]


# Keyed by address, each input kept alive so that no address comes back for other data: right on every hidden
# set at first sight, stale once the timed tensors hold new values.
CACHE = """_cache = {}
def cached(x, compute):
    if x.data_ptr() not in _cache:
        _cache[x.data_ptr()] = (x, compute())
    return _cache[x.data_ptr()][1].clone()
"""


def test_results_cached_by_address_are_refused(task, tmp_path):
    path = candidate(tmp_path, "cache", "cached(x, lambda: torch.relu(self.norm(x)))", prelude=CACHE)
    r = judged(task, path)
    assert r["tier"] == "failed" and "wrong after timing" in r["log"], r["log"]


def test_a_patched_timer_is_refused(task, tmp_path):
    saved = torch.cuda.Event.elapsed_time
    try:
        path = candidate(tmp_path, "timer", CANDIDATES["honest"],
                         prelude="torch.cuda.Event.elapsed_time = lambda self, end: 1e-6")
        r = judged(task, path)
    finally:
        torch.cuda.Event.elapsed_time = saved
    assert r["tier"] == "failed" and "torch.cuda.Event.elapsed_time" in r["log"] and "timer patching" in r["log"], r["log"]


def test_a_lazy_output_is_refused(task, tmp_path):
    prelude = "class Lazy(torch.Tensor):\n    pass"
    r = judged(task, candidate(tmp_path, "lazy", "torch.relu(self.norm(x)).as_subclass(Lazy)", prelude=prelude))
    assert r["tier"] == "failed" and "not a plain torch.Tensor" in r["log"], r["log"]


needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: timing")


@pytest.fixture(scope="module")
def gpu_task(tmp_path_factory):
    return imported(tmp_path_factory.mktemp("gpu"), PROBLEM.replace("torch.randn(8, 16)", "torch.randn(4096, 1024)")
                    .replace("return [16]", "return [1024]"), device="cuda")


@needs_gpu
def test_work_on_another_stream_is_refused(gpu_task, tmp_path):
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
    honest = judged(gpu_task, candidate(tmp_path, "honest_gpu", CANDIDATES["honest"]), device="cuda")
    assert honest["tier"] == "strict" and honest["protocol"] == "kb" and honest["native"]["trials"] >= 100, honest["log"]
    r = judged(gpu_task, candidate(tmp_path, "elsewhere", "elsewhere(x, lambda: torch.relu(self.norm(x)))",
                                   prelude=prelude), device="cuda")
    assert r["tier"] == "failed" and "escaped the timed stream" in r["log"], r["log"]


# Hack catalogue, work before its turn on the GPU: a ModelNew is built first where no GPU is shown (its load_inline
# builds cached), and its code runs on the GPU only in its turn; a module that needs the GPU to build is built
# again there, and says so.
@needs_gpu
def test_a_candidates_code_meets_the_gpu_only_in_its_turn(gpu_task, tmp_path):
    honest = judged(gpu_task, candidate(tmp_path, "honest_gpu", CANDIDATES["honest"]), device="cuda")
    assert honest["tier"] == "strict" and "without a GPU failed" not in honest["log"], honest["log"]
    r = judged(gpu_task, candidate(tmp_path, "gpu_at_import", CANDIDATES["honest"],
                                   prelude="on_the_gpu = torch.ones(1, device='cuda')"), device="cuda")
    assert r["tier"] == "strict" and "its build without a GPU failed" in r["log"], r["log"]


def test_the_build_before_the_turn_reports_what_stopped_it(tmp_path):
    (tmp_path / "p.py").write_text(PROBLEM)

    def prebuilt(name, prelude=""):
        path = candidate(tmp_path, name, CANDIDATES["honest"], prelude=prelude)
        out = subprocess.run([sys.executable, "-m", "kforge.modelnew_candidate", "--prebuild", "--candidate",
                              str(path), "--problem", str(tmp_path / "p.py")],
                             capture_output=True, text=True, timeout=120, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])
    assert prebuilt("fine")["prebuilt"]
    broken = prebuilt("broken", prelude="raise RuntimeError('no GPU here')")
    assert not broken["prebuilt"] and broken["why"] == "RuntimeError: no GPU here", broken


def test_python_numbers_among_the_inputs_reach_model_and_candidate_alike(tmp_path):
    # get_inputs() gives a scale and a dim beside the tensor: constants of the task, bound into Model and ModelNew.
    source = PROBLEM.replace("def forward(self, x):\n        return torch.relu(self.norm(x))",
                             "def forward(self, x, scale, dim):\n        return torch.softmax(self.norm(x) * scale, dim=dim)")
    source = source.replace("return [torch.randn(8, 16)]", "return [torch.randn(8, 16), 0.5, 1]")
    task = imported(tmp_path / "numbers", source)
    assert len(json.loads((task[0] / "task.json").read_text())["graph"]["inputs"]) == 1
    path = tmp_path / "numbers_new.py"
    path.write_text("""import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
    def forward(self, x, scale, dim):
        return torch.softmax(self.norm(x) * scale, dim=dim)
""")
    assert judged(task, path)["tier"] == "strict"
    path.write_text(path.read_text().replace("* scale", "* (scale + 0.25)"))
    assert judged(task, path)["tier"] == "failed"


LOAD_INLINE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
CUDA = """
__global__ void relu_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu(torch::Tensor x) {
  auto y = torch::empty_like(x);
  relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}
"""
ext = load_inline("kf_relu_ext", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=CUDA, functions=["relu"])
class ModelNew(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
    def forward(self, x):
        return ext.relu(self.norm(x).contiguous())
'''


def nvcc_major():
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout if shutil.which("nvcc") else ""
    release = out.split("release ")[-1].split(".")[0] if "release " in out else ""
    return release


@pytest.mark.skipif(not torch.version.cuda or nvcc_major() != torch.version.cuda.split(".")[0],
                    reason="needs nvcc of torch's CUDA major version (cpp_extension refuses another)")
@pytest.mark.slow
def test_a_load_inline_build_made_without_a_gpu_is_found_built_again(tmp_path):
    # What the judge gives both the prebuild and the load in the turn: no GPU for the first, the same architectures
    # for both, one extensions folder.
    (tmp_path / "p.py").write_text(PROBLEM)
    (tmp_path / "m.py").write_text(LOAD_INLINE)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TORCH_CUDA_ARCH_LIST": "9.0+PTX",
           "TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")}

    def prebuilt():
        out = subprocess.run([sys.executable, "-m", "kforge.modelnew_candidate", "--prebuild", "--candidate",
                              str(tmp_path / "m.py"), "--problem", str(tmp_path / "p.py")],
                             capture_output=True, text=True, timeout=600, env=env)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])
    first, again = prebuilt(), prebuilt()
    assert first["prebuilt"] and again["prebuilt"], (first, again)
    assert again["ms"] < first["ms"] / 3, (first, again)
    # kforge's build (python/kforge/extension_build.py) made it, split in two, and found it again by its hash
    assert first["builds"][0]["how"].startswith("split") and again["builds"][0]["how"] == "cached", (first, again)


def test_outputs_must_be_plain_tensors_of_the_tasks_dtype_and_shape():
    from kforge.modelnew_candidate import Rejected, check_outputs
    specs = [{"dtype": "f32", "shape": [2]}] * 2
    check_outputs([torch.zeros(2), torch.nn.Parameter(torch.zeros(2))], specs)

    class Lazy(torch.Tensor):
        pass
    with pytest.raises(Rejected, match="not a plain torch.Tensor"):
        check_outputs([torch.zeros(2).as_subclass(Lazy), torch.zeros(2)], specs)
    with pytest.raises(Rejected, match="torch.float64 \\[2\\]; the task's is torch.float32 \\[2\\]"):
        check_outputs([torch.zeros(2, dtype=torch.float64), torch.zeros(2)], specs)
    with pytest.raises(Rejected, match="returned 1 outputs; the task has 2"):
        check_outputs([torch.zeros(2)], specs)


def test_tolerances_loosened_in_the_candidates_process_loosen_nothing(task, tmp_path):
    # Off by 1e-3: the relaxed tier, not the strict one, whatever the candidate's own copy of the tolerances says.
    path = candidate(tmp_path, "loose", "torch.relu(self.norm(x)) + 1e-3",
                     prelude="from kforge.bridge import TOLERANCE\nTOLERANCE['strict'] = TOLERANCE['relaxed'] = 1e9")
    r = judged(task, path)
    assert r["tier"] == "relaxed", r["log"]


# Threat model (docs/interfaces.md): the stored answers and the verdict are out of a ModelNew's reach.
def test_a_candidate_that_reads_the_stored_answers_finds_none(task, tmp_path):
    bundle, _ = task
    body = f"torch.from_numpy(__import__('numpy').fromfile('{bundle}/sets/0/out0.bin', dtype='float32')).view(8, 16)"
    r = judged(task, candidate(tmp_path, "thief", body))
    assert r["tier"] == "failed" and "No such file" in r["log"], r["log"]


def test_a_candidate_that_writes_its_own_verdict_is_not_believed(task, tmp_path):
    forge = ("import os\nfake = b'{\"done\": true, \"strict\": true, \"reward\": 9}\\n'\n"
             "for fd in range(1, 16):\n    try:\n        os.write(fd, fake)\n    except OSError:\n        pass\n")
    r = judged(task, candidate(tmp_path, "forger", CANDIDATES["honest"], prelude=forge))
    assert r["tier"] == "failed" and r["reward"] == -1, r["log"]
    assert "where its hello was due" in r["log"], r["log"]


RELU_ON_UNIFORM = """import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.rand(64, 32)]
def get_init_inputs():
    return []
"""


def test_a_candidate_right_only_on_get_inputs_distribution_gets_that_verdict(tmp_path):
    relu = imported(tmp_path / "relu", RELU_ON_UNIFORM)
    identity = tmp_path / "identity.py"
    identity.write_text("import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x.clone()\n")
    r = judged(relu, identity)
    assert r["tier"] == "strict", "the KernelBench-compatible verdict: every draw of get_inputs is in [0, 1)"
    assert r["distribution"]["verdict"] == "correct only on get_inputs' distribution", r
    assert "beyond get_inputs' distribution (signs flipped)" in r["log"], r["log"]


# A problem kforge's importer cannot follow (control flow on data, an op outside its IR) is still a task: kept whole,
# its candidates judged against PyTorch's references.
UNTRACEABLE = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        y = torch.fft.rfft(x).abs()
        return y if y.sum() > 0 else -y
def get_inputs():
    return [torch.randn(16, 64)]
def get_init_inputs():
    return []
"""


def test_a_problem_kept_whole_judges_its_candidates(tmp_path):
    task = imported(tmp_path / "whole", UNTRACEABLE)
    assert json.loads((task[0] / "task.json").read_text())["importer"]["opaque"]
    honest = tmp_path / "fft.py"
    honest.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                      "        return torch.fft.rfft(x).abs()\n")
    r = judged(task, honest)
    assert r["tier"] == "strict", r["log"]
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                     "        return torch.fft.rfft(x).real\n")
    assert judged(task, wrong)["tier"] == "failed"
