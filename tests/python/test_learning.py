"""Issue 5's GPU-free paths: `kforge train --from-db` (behaviour cloning from recorded measurements, resumable),
the training task list (bench/ refused) and the held-out report (table, summary numbers, SVG)."""
import json
import sqlite3
import xml.etree.ElementTree as ET

import pytest

from kforge import learning_eval, train
from test_cli import KFORGE, SOFTMAX, kforge



def built_with_torch() -> bool:
    try:
        import kforge._core as core
    except ImportError:
        return False
    return core.learned_policy_available()


needs_torch_build = pytest.mark.skipif(not KFORGE.exists() or not built_with_torch(),
                                       reason="kforge built without libtorch (KFORGE_WITH_TORCH)")


@needs_torch_build
def test_train_from_db_learns_from_recorded_plans_and_resumes(tmp_path):
    db, ck = tmp_path / "m.db", tmp_path / "policy"
    r = kforge("train", "--from-db", db, "--checkpoints", ck)
    assert r.returncode == 2 and "no correct plan" in r.stderr, r.stderr
    with sqlite3.connect(db) as c:  # the schema exists now: record a task and two correct plans, one failed
        c.execute("INSERT INTO tasks VALUES ('h', 'softmax', ?)", (json.dumps(SOFTMAX),))
        for schedule, relaxed, ms in (('{"fuse_rows": false}', 1, 0.01), ("{}", 1, 0.02), ('{"cuda_graph": false}', 0, 0)):
            c.execute("INSERT INTO measurements (task, graph_hash, schedule, compiled, strict, relaxed, median_ms, reward, gpu)"
                      " VALUES ('softmax', 'h', ?, 1, ?, ?, ?, 1.2, 'H200')", (schedule, relaxed, relaxed, ms))
    r = kforge("train", "--from-db", db, "--checkpoints", ck, "--epochs", "5")
    assert r.returncode == 0, r.stderr
    assert "on 2 plans of 1 tasks" in r.stdout and (ck / "policy-000001.pt").exists()
    r = kforge("train", "--from-db", db, "--checkpoints", ck, "--epochs", "5")
    assert r.returncode == 0 and (ck / "policy-000002.pt").exists(), r.stderr  # continued the newest checkpoint


def test_training_refuses_bench_problems(tmp_path):
    with pytest.raises(SystemExit, match="bench/ problem"):
        train.training_tasks(train.REPO / "bench" / "level1")
    with pytest.raises(SystemExit, match="no problem files"):
        train.training_tasks(tmp_path)


def curve(values):
    return {"best_ms": values, "candidates": len(values)}


def test_report_numbers_table_and_plot(tmp_path):
    n = 20
    results = [
        {"task": "a", "reference": curve([2.0] * 100 + [1.0] * 156),
         "policies": {"trained": curve([1.5] * 3 + [1.0] * (n - 3)), "random": curve([2.0] * n),
                      "untrained": curve([None] * n)}},
        {"task": "b", "reference": curve([1.0] * 256),
         "policies": {"trained": curve([2.0] * n), "random": curve([1.0] * 5)}},  # random ran out of plans at 5
    ]
    s = learning_eval.write_report(results, {"gpu": "H200", "reference": 256}, tmp_path)
    rows = {r["task"]: r for r in s["rows"]}
    assert rows["a"]["trained"] == 1.0 and rows["a"]["random"] == 0.5 and rows["a"]["untrained"] == 0.0
    assert rows["b"]["trained"] == 0.5 and rows["b"]["random"] == 1.0  # its last best carries on
    assert s["trained_reaches_95pct_of_reference"] == 50.0
    assert s["mean_ratio_trained_vs_random"] == pytest.approx((2.0 / 1.0 + 1.0 / 2.0) / 2)
    md = (tmp_path / "learning_eval.md").read_text()
    assert "| a | 1.0000 | 1.00 | 0.00 | 0.50 |" in md and "50% of 2" in md
    root = ET.fromstring((tmp_path / "learning_eval.svg").read_text())
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 3
    assert json.loads((tmp_path / "learning_eval.json").read_text())["summary"]["problems"] == 2


class FakeHosted:
    graph = SOFTMAX
    strict_tolerance = [[1e-4]]

    def pointers(self):
        return [[1]], [[2]], []

    def resident_tolerance(self):
        return self.strict_tolerance

    def baseline_ms(self, which):
        return 0.5 if which == "eager" else 0.0


class FakeTrainer:
    """Stands in for kforge._core.Trainer (which needs a GPU): remembers what the loop asked of it."""
    calls = []

    def __init__(self, checkpoint_dir, samples, threads, seed, lr, entropy, versions):
        self.done = 5 if "resume" in checkpoint_dir else 0

    def progress(self):
        return json.dumps({"tasks_done": self.done})

    def resumed(self):
        return self.done > 0

    def collect(self, graph_json, name, sets, refs, params, db, eager_ms, compile_ms, strict_tolerance):
        FakeTrainer.calls.append(("collect", name, eager_ms))
        return json.dumps({"task": name, "mean_reward": 0.5})

    def update(self, tasks_done):
        FakeTrainer.calls.append(("update", tasks_done))
        return json.dumps({"step": 1, "tasks_done": tasks_done, "policy_loss": 0.1, "value_loss": 0.2, "entropy": 1.0,
                           "approx_kl": 0.0, "checkpoint": "x.pt"})


def test_training_loop_batches_resumes_and_logs(tmp_path, monkeypatch):
    import torch

    import kforge._core as core
    for i in range(3):
        (tmp_path / f"{i:04d}_task.py").write_text("")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(core, "Trainer", FakeTrainer)
    monkeypatch.setattr(train, "host_task", lambda path, sets, compile_baseline: FakeHosted())
    FakeTrainer.calls = []
    log = tmp_path / "log.jsonl"
    assert train.main(["--tasks", str(tmp_path), "--checkpoints", str(tmp_path / "resume"), "--batch", "2",
                       "--max-tasks", "4", "--log", str(log)]) == 0
    # Resumed at task 5 of 3 (cycling): tasks 2, 0 | 1, 2, then an update after each batch with the cursor.
    assert FakeTrainer.calls == [("collect", "0002_task", 0.5), ("collect", "0000_task", 0.5), ("update", 7),
                                 ("collect", "0001_task", 0.5), ("collect", "0002_task", 0.5), ("update", 9)]
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["tasks_done"] for x in lines] == [7, 9] and lines[0]["mean_reward"] == 0.5


def test_evaluation_loop_writes_the_report(tmp_path, monkeypatch):
    import torch

    import kforge._core as core
    import kforge.session as session
    problems = tmp_path / "heldout"
    problems.mkdir()
    (problems / "0000_a.py").write_text("")
    (problems / "0001_b.py").write_text("")
    asked = {}

    def curves(graph, name, sets, refs, params, db, eager, compile_ms, n, ref, policies, ck, cm, seed, threads, versions):
        if name == "0001_b":
            raise RuntimeError("launch failed")  # one problem's failure is reported, not fatal
        asked.update(policies=policies, n=n, ref=ref)
        return json.dumps({"task": name, "reference": curve([1.0] * ref), "distinct_plans_measured": 9,
                           "policies": {p: curve([2.0] + [1.0] * (n - 1)) for p in policies}})
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "H200")
    monkeypatch.setattr(core, "policy_curves", curves)
    monkeypatch.setattr(session, "host_task", lambda path, sets, compile_baseline: FakeHosted())
    out = tmp_path / "out"
    assert learning_eval.main(["--problems", str(problems), "--out", str(out), "--candidates", "20", "--reference", "40"]) == 0
    assert asked == {"policies": ["trained", "untrained", "random", "heuristic"], "n": 20, "ref": 40}  # no cost model given
    report = json.loads((out / "learning_eval.json").read_text())
    assert report["summary"]["trained_reaches_95pct_of_reference"] == 100.0
    md = (out / "learning_eval.md").read_text()
    assert (out / "learning_eval.svg").exists() and "| 0000_a |" in md
    assert "not evaluated: 0001_b: RuntimeError: launch failed" in md and report["summary"]["problems"] == 1
