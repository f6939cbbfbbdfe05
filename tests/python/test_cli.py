"""The kforge command's GPU-free paths: clear errors with exit code 2 for bad input, and `lower --compile`
compiling every kernel of a graph for sm_90 without a GPU."""
import json
import os
import subprocess
from pathlib import Path

import pytest

KFORGE = Path(os.environ.get("KFORGE_BIN", Path(__file__).resolve().parents[2] / "build" / "kforge"))

pytestmark = pytest.mark.skipif(not KFORGE.exists() and os.environ.get("KFORGE_NO_CORE") == "1",
                                reason="the kforge binary is not built (KFORGE_NO_CORE=1)")

SOFTMAX = {"inputs": [{"name": "x", "shape": [4, 33]}],
           "nodes": [{"name": "y", "op": "softmax", "args": ["x"], "attrs": {"dim": 1}}], "outputs": ["y"]}


def kforge(*args):
    return subprocess.run([str(KFORGE), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_binary_exists():
    assert KFORGE.exists(), f"{KFORGE} is missing: build with scripts/setup.sh first"


def test_lower_compiles_every_kernel(tmp_path):
    g = tmp_path / "g.json"
    g.write_text(json.dumps(SOFTMAX))
    r = kforge("lower", g, "--compile")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ": ok" in r.stdout


def test_lower_writes_a_plan_that_names_its_kernels(tmp_path):
    g, out = tmp_path / "g.json", tmp_path / "plan.json"
    g.write_text(json.dumps(SOFTMAX))
    assert kforge("lower", g, "-o", out).returncode == 0
    plan = json.loads(out.read_text())
    assert len(plan["kernels"]) == 1 and "kforge kernel" in plan["kernels"][0]["source"]


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON"),
    (json.dumps({"inputs": [{"name": "x", "shape": [3]}], "nodes": [{"name": "y", "op": "fft", "args": ["x"]}],
                 "outputs": ["y"]}), "node 'y' (op fft): unknown op"),
    (json.dumps({"inputs": [{"name": "x", "shape": [3]}], "nodes": [], "outputs": []}), "graph has no outputs"),
])
def test_bad_graphs_exit_2_naming_the_cause(tmp_path, content, message):
    g = tmp_path / "bad.json"
    g.write_text(content)
    r = kforge("lower", g)
    assert r.returncode == 2
    assert message in r.stderr, r.stderr


def test_missing_file_and_bad_schedule(tmp_path):
    r = kforge("lower", tmp_path / "nope.json")
    assert r.returncode == 2 and "cannot read" in r.stderr
    g, s = tmp_path / "g.json", tmp_path / "s.json"
    g.write_text(json.dumps(SOFTMAX))
    s.write_text(json.dumps({"kernels": {"y.reduce0": {"strategy": "flat"}}}))
    r = kforge("lower", g, "--schedule", s)
    assert r.returncode == 2 and "schedule of kernel 'y.reduce0': strategy cannot be flat" in r.stderr, r.stderr


def test_optimize_without_a_gpu_says_so(tmp_path):
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("a GPU is present")
    problem = tmp_path / "p.py"
    problem.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
                       "def get_inputs():\n    return [torch.rand(8)]\ndef get_init_inputs():\n    return []\n")
    r = kforge("optimize", problem, "--budget", 1, "--bundle", tmp_path / "p")
    assert r.returncode == 2
    assert "needs a CUDA GPU" in r.stderr
    r = kforge("--quiet", "optimize", problem, "--budget", 1, "--bundle", tmp_path / "p")  # quiet keeps errors
    assert r.returncode == 2 and "kforge: error: optimize needs a CUDA GPU" in r.stderr, r.stderr


def test_quiet_and_verbose_exclude_each_other():
    r = kforge("-q", "-v", "lower", "x.json")
    assert r.returncode != 0 and "--quiet excludes --verbose" in r.stderr.replace("-q,", "").replace("-v,", ""), r.stderr


def test_train_costmodel_from_a_measurement_database(tmp_path):
    import math
    import random
    import sqlite3

    db = tmp_path / "m.db"
    r = kforge("train-costmodel", "--db", db, "-o", tmp_path / "model.json")
    assert r.returncode == 2 and "usable measurements" in r.stderr  # the empty database it just created
    rng = random.Random(0)
    with sqlite3.connect(db) as c:
        for t in range(8):  # 8 softmax tasks of different sizes, 12 measured schedules each
            graph = json.loads(json.dumps(SOFTMAX))
            graph["inputs"][0]["shape"] = [64 * (t + 1), 1000 + 37 * t]
            h = f"{t:016x}"
            c.execute("INSERT INTO tasks VALUES (?, ?, ?)", (h, f"t{t}", json.dumps(graph)))
            for block in (64, 128, 256, 512, 1024, 128, 256, 512, 1024, 64, 256, 512):
                sched = {"kernels": {"y.reduce0": {"strategy": "block", "block": block}}}
                ms = 0.01 * (t + 1) * (1 + abs(math.log2(block) - 8) / 4) * (1 + 0.01 * rng.random())
                c.execute("INSERT INTO measurements (task, graph_hash, schedule, compiled, strict, relaxed, median_ms, gpu)"
                          " VALUES (?, ?, ?, 1, 1, 1, ?, 'H200')", (f"t{t}", h, json.dumps(sched), ms))
    r = kforge("train-costmodel", "--db", db, "-o", tmp_path / "model.json", "--folds", "4")
    if "built without XGBoost" in r.stderr:
        pytest.skip("kforge was built without XGBoost")
    assert r.returncode == 0, r.stderr
    assert "4-fold cross-validation by task (pairwise objective), 8 tasks" in r.stdout
    assert "trained on 40 distinct plans (96 measurements) of 8 tasks" in r.stdout  # 5 block sizes, 12 measurements
    meta = json.loads((tmp_path / "model.json").read_text())
    assert meta["kind"] == "xgboost-pairwise" and meta["objective"] == "rank:pairwise" and "plan.mean_block" in meta["features"]
    r = kforge("train-costmodel", "--db", db, "-o", tmp_path / "model.json", "--objective", "mse")
    assert r.returncode == 2 and "--objective must be pairwise or regression" in r.stderr


def test_an_import_whose_problem_hangs_is_stopped_and_named(tmp_path):
    p = tmp_path / "hang.py"
    p.write_text("import time, torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                 "def get_inputs():\n    time.sleep(600)\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n")
    r = kforge("import", p, "-o", tmp_path / "b", "--device", "cpu", "--no-baselines", "--timeout", "3")
    assert r.returncode == 2 and "did not finish within 3 s" in r.stderr, r.stderr
    assert not any(x.name.startswith("b") for x in tmp_path.iterdir())
