"""bench/run_suite.py's in-process runner, GPU-free (the session process is a stand-in): a problem that takes the
process down is the one marked lost and the rest go on in a fresh process; a problem after which the session
reports its CUDA context unusable (exit CONTEXT_LOST) keeps its report and loses nobody."""
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

from conftest import REPO
from kforge import session


def runner():
    spec = importlib.util.spec_from_file_location("run_suite", REPO / "bench" / "run_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(tmp_path, monkeypatch, script):
    """script: per session process, (the problems it reports before stopping, its exit status)."""
    rs = runner()
    problems = [tmp_path / f"{n}.py" for n in ("a", "b", "c", "d")]
    out = tmp_path / "out"
    for d in ("reports", "logs"):
        (out / d).mkdir(parents=True)
    calls = []

    def fake_run_one(cmd, log_path, timeout):
        reported, rc = script[len(calls)]
        calls.append([Path(c).stem for c in cmd if str(c).endswith(".py")])
        for name in reported:
            (out / "reports" / f"{name}.json").write_text(json.dumps({"name": name, "tier": "strict", "kforge_ms": 1.0}))
        Path(log_path).write_text("")
        return rc, False, 1.0, None

    monkeypatch.setattr(rs, "run_one", fake_run_one)
    args = SimpleNamespace(budget=2, timeout=60.0, precision=None)
    rs.run_in_process(args, problems, out, tmp_path / "work", {})
    rows = {r["problem"]: r for r in json.loads((out / "suite.json").read_text())["rows"]}
    return calls, rows


def test_a_crash_loses_the_problem_it_happened_on_and_the_rest_go_on(tmp_path, monkeypatch):
    calls, rows = run(tmp_path, monkeypatch, [(["a"], -11), (["c", "d"], 0)])
    assert calls == [["a", "b", "c", "d"], ["c", "d"]]
    assert rows["b"]["tier"] == "failed" and rows["a"]["tier"] == rows["c"]["tier"] == rows["d"]["tier"] == "strict"


def test_a_lost_context_keeps_its_report_and_loses_no_other_problem(tmp_path, monkeypatch):
    assert session.CONTEXT_LOST == runner().CONTEXT_LOST
    calls, rows = run(tmp_path, monkeypatch, [(["a", "b"], session.CONTEXT_LOST), (["c", "d"], 0)])
    assert calls == [["a", "b", "c", "d"], ["c", "d"]]
    assert all(r["tier"] == "strict" for r in rows.values())


def test_the_summary_counts_problems_whose_baselines_miss_the_strict_tier():
    rs = runner()
    rows = [{"problem": p, "tier": "strict", "speedup_best": 1.1, "speedup_eager": 1.1, "speedup_compile": 1.1,
             "eager_tier": e, "compile_tier": c}
            for p, e, c in (("conv", "relaxed", "relaxed"), ("relu", "strict", "strict"), ("old", None, None),
                            ("mixed", "strict", "none"))]
    s = rs.summarise(rows)
    assert s["baselines_outside_strict_tier"] == 2
    for r in rows:
        r.update(kforge_ms=1.0, eager_ms=1.1, compile_ms=1.1, bandwidth_gbs=None, pct_copy_bw=None, flops=None)
    text = rs.table(rows, s)
    assert "| relaxed/relaxed |" in text and "| -/- |" in text and "misses the strict tier: 2" in text


def test_a_half_precision_suite_says_which_tiers_its_table_holds():
    run_suite = runner()
    report = {"tier": "strict", "eager_ms": 2.0, "compile_ms": 1.0, "kforge_ms": 0.5}
    half = run_suite.make_row("p_fp16", Path("p.py"), report, 0, False, 1.0, None, "log", 60, "fp16")
    text = run_suite.table([half], run_suite.summarise([half]))
    assert "- precision fp16 (KernelBench's --precision" in text and "floor 1e-3 instead of 1e-4" in text
    full = run_suite.make_row("p", Path("p.py"), report, 0, False, 1.0, None, "log", 60)
    assert "- precision" not in run_suite.table([full], run_suite.summarise([full]))


def test_a_problem_torch_compile_failed_on_is_compared_with_eager_and_says_so():
    run_suite = runner()
    report = {"tier": "strict", "eager_ms": 2.0, "compile_ms": None, "kforge_ms": 0.5, "speedup_eager": 4.0,
              "speedup_compile": None, "speedup_best": 4.0, "compile_failed": "InductorError: TypeError: list indices"}
    row = run_suite.make_row("p", Path("p.py"), report, 0, False, 1.0, None, "log", 60)
    assert row["tier"] == "strict" and row["speedup_best"] == 4.0
    text = run_suite.table([row], run_suite.summarise([row]))
    assert "torch.compile failed (kforge compared with eager alone):\n- p: InductorError: TypeError: list indices" in text
