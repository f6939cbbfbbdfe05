"""kforge.library_sweep's bookkeeping, GPU-free: which groups of a real lowered plan it sweeps (products and
convolutions), the schedules it writes for them (they lower), where it stops along cuBLASLt's list, and which call counts for a tier."""
import json
import subprocess

import pytest

from kforge import library_sweep as sweep
from test_matmul_problems import KFORGE, REPO, graph_of, lower_to_plan

pytestmark = pytest.mark.skipif(not KFORGE.exists(), reason="needs the kforge binary (build/kforge)")


def lower_with(graph_path, schedule, tmp_path):
    s = tmp_path / "schedule.json"
    s.write_text(json.dumps(schedule))
    r = subprocess.run([str(KFORGE), "lower", str(graph_path), "--schedule", str(s), "-o", str(tmp_path / "plan.json")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "plan.json").read_text())


def test_sweeps_each_product_group_and_its_calls_lower(tmp_path):
    graph = graph_of(REPO / "bench" / "level2" / "06_linear_layernorm_relu.py")
    plan = lower_to_plan(graph, tmp_path)
    groups = list(sweep.library_groups(plan))
    assert len(groups) == 1 and sweep.library_groups(plan) == {groups[0]: "product"}, "the layer norm is not swept"
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    forms = sweep.forms_of("product", 4)
    assert [f["precision"] for f in forms] == ["fp32", "tf32", "fp16", "fp16x3", "fp16x3"] and forms[-1]["chunks"] == 4
    for form in forms:
        s = sweep.with_call(plan["schedule"], groups[0], form, 5)
        lowered = lower_with(tmp_path / "graph.json", s, tmp_path)
        steps = [k for k in lowered["kernels"] if k.get("kind") == "cublaslt"]
        assert steps and all(k["library"]["precision"] == form["precision"] and k["library"]["algo"] == 5 for k in steps)
        assert len(steps) == form.get("chunks", 1), "an fp16x3 call in pieces is one cuBLASLt step a piece"
        assert sweep.library_groups(lowered) == {groups[0]: "product"}
    # The rest of the plan is kept: only the swept group's schedule changes.
    other = {"fuse_rows": False, "kernels": {"elsewhere": {"strategy": "block"}}}
    assert sweep.with_call(other, groups[0], {"precision": "fp32"}, 0)["kernels"]["elsewhere"] == {"strategy": "block"}
    assert sweep.with_call(other, groups[0], {"precision": "fp32"}, 0)["fuse_rows"] is False
    assert "kernels" in other and groups[0] not in other["kernels"], "the caller's schedule is not modified"
    # In the channels-last form (codegen/channels_last.h) a convolution's call is nhwc whatever the form says.
    last = sweep.with_call({"channels_last": True}, "c", {"precision": "tf32"}, 0, "convolution")["kernels"]["c"]
    assert last["layout"] == "nhwc" and last["precision"] == "tf32"
    assert "layout" not in sweep.with_call({"channels_last": True}, "m", {"precision": "tf32"}, 0)["kernels"]["m"]


def test_sweeps_a_convolution_in_every_form_it_has(tmp_path):
    graph = graph_of(REPO / "bench" / "level1_conv" / "02_conv2d_square.py")
    plan = lower_to_plan(graph, tmp_path)
    groups = sweep.library_groups(plan)
    assert list(groups.values()) == ["convolution"], "no product among them"
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    group = next(iter(groups))
    for form in sweep.forms_of("convolution", 1):
        lowered = lower_with(tmp_path / "graph.json", sweep.with_call(plan["schedule"], group, form, 3), tmp_path)
        steps = [k for k in lowered["kernels"] if k.get("kind") == "cudnn"]
        assert len(steps) == 1 and steps[0]["library"]["precision"] == form["precision"] and steps[0]["library"]["algo"] == 3
        # The bias folded into the convolution goes into cuDNN's graph only in the epilogue form.
        assert ("epilogue" in steps[0]["library"]) == (form.get("epilogue") == "library"), form
    assert sweep.describe(sweep.CONV_FORMS[-1] | {"strategy": "library", "algo": 2}) == "library fp16x3 nhwc algo 2 epilogue in cuDNN"


def test_mma_groups_are_products_too():
    plan = {"kernels": [{"group": "matmul", "kind": "nvrtc"}, {"group": "row", "kind": "nvrtc"}],
            "schedule": {"kernels": {"matmul": {"strategy": "mma", "precision": "tf32x3"}, "row": {"strategy": "block"}}}}
    assert sweep.library_groups(plan) == {"matmul": "product"}


def test_stops_where_cublaslt_offers_no_more():
    result = {"library": [{"group": "matmul", "library": "cublaslt", "algo": 0, "offered": 8},
                          {"group": "matmul", "library": "cublaslt", "algo": 0, "offered": 3},  # a later piece: fewer
                          {"group": "other", "library": "cublaslt", "algo": 0, "offered": 1}]}
    assert sweep.offered(result, "matmul") == 3
    assert sweep.offered({"library": [{"group": "conv", "library": "cudnn", "algo": 0, "offered": 12}]}, "conv") == 12
    assert sweep.offered(result, "missing") == 0, "a call that did not load offers nothing to sweep"
    assert sweep.offered({}, "matmul") == 0


def evaluation(tier, ms):
    return {"strict": tier == "strict", "relaxed": tier in ("strict", "relaxed"), "tier": tier,
            "native": {"median_ms": ms if tier != "failed" else 0.0}}


def test_a_call_counts_only_in_the_tiers_it_passed():
    rows = [{"precision": "fp16", "algo": 0, "eval": evaluation("relaxed", 0.5)},
            {"precision": "fp32", "algo": 2, "eval": evaluation("strict", 2.0)},
            {"precision": "fp32", "algo": 0, "eval": evaluation("strict", 2.2)},
            {"precision": "tf32", "algo": 0, "eval": evaluation("failed", 0.1)},
            {"precision": "fp16x3", "algo": 0, "eval": evaluation("strict", 0.7)}]
    assert sweep.fastest(rows, "strict", sweep.CALL_PRECISIONS)["algo"] == 2
    assert sweep.fastest(rows, "relaxed", sweep.CALL_PRECISIONS)["precision"] == "fp16"
    assert sweep.fastest(rows, "strict", ("fp16x3",))["eval"]["native"]["median_ms"] == 0.7
    assert sweep.fastest(rows[3:4], "relaxed", sweep.CALL_PRECISIONS) is None, "a failed call is never the best"


def test_summary_counts_the_target():
    rows = [{"problem": "a", "x_call_strict": 3.0, "call_strict": {}, "x_call_relaxed": 0.95, "call_relaxed": {},
             "kforge_strict_ms": 1.0, "kforge_relaxed_ms": 1.0},
            {"problem": "b", "x_call_strict": 0.8, "call_strict": {}, "x_call_relaxed": 1.2, "call_relaxed": {}},
            {"problem": "c", "x_call_strict": None, "call_strict": None, "x_call_relaxed": 1.0, "call_relaxed": {}},
            {"problem": "d", "error": "no correct plan"},
            {"problem": "e", "no_product": "1 kernel(s) of kind nvrtc", "kforge_strict_ms": 1.0},
            {"problem": "f", "family": "convolution", "x_call_strict": 0.5, "call_strict": {}, "x_call_relaxed": None,
             "call_relaxed": None},
            {"problem": "g", "x_call_strict": None, "call_strict": {"ms": 2.0}, "kforge_strict_ms": None,
             "x_call_relaxed": 1.1, "call_relaxed": {}, "kforge_relaxed_ms": 1.0}]
    lines = "\n".join(sweep.summary(rows))
    assert "problems: 7 (1 failed; 1 whose plan has no library call left)" in lines
    assert "products, strict tier: kforge has no plan passing the tier where a cuBLASLt call does on 1" in lines
    assert "products, strict tier: kforge at >= 90% of the best cuBLASLt call's speed on 1 of 2" in lines
    assert "products, relaxed tier: kforge at >= 90% of the best cuBLASLt call's speed on 4 of 4" in lines
    assert "products, strict tier: no single cuBLASLt call (fp32, tf32 or fp16, any offered algorithm) passes on 1" in lines
    assert "convolutions, strict tier: kforge at >= 90% of the best cuDNN call's speed on 0 of 1" in lines
    assert "convolutions, relaxed tier: no single cuDNN call" in lines
    assert sweep.table_row(rows[3]).startswith("| d | failed: no correct plan")
    assert sweep.table_row(rows[4]).startswith("| e | 1.000 | no library call: 1 kernel(s) of kind nvrtc |")
    assert sweep.call_name({"precision": "fp16", "layout": "nhwc", "algo": 1}) == "fp16 nhwc algo 1"


def test_merge_joins_sweeps_run_side_by_side(tmp_path):
    def part(name, rows, complete=True):
        (tmp_path / name).mkdir()
        path = tmp_path / name / "library_sweep.json"
        path.write_text(json.dumps({"meta": {"gpu": "H200", "budget": 7}, "rows": rows, "complete": complete}))
        return str(path)
    a = part("gpu0", [{"problem": "a", "kforge_strict_ms": 1.0, "product": "library fp32 algo 0", "call_strict": {
        "precision": "fp32", "algo": 0, "ms": 3.0}, "x_call_strict": 3.0, "kforge_relaxed_ms": 1.0, "call_relaxed": None,
        "x_call_relaxed": None, "calls": 9}])
    b = part("gpu1", [{"problem": "b", "error": "no correct plan"}], complete=False)
    assert sweep.main(["--merge", a, b, "--out", str(tmp_path / "all")]) == 0
    merged = json.loads((tmp_path / "all" / "library_sweep.json").read_text())
    assert [r["problem"] for r in merged["rows"]] == ["a", "b"]
    assert merged["complete"] is False and merged["meta"]["merged_from"] == [a, b]
    assert "products, strict tier: kforge at >= 90% of the best cuBLASLt call's speed on 1 of 1" in \
        (tmp_path / "all" / "library_sweep.md").read_text()
    with pytest.raises(SystemExit, match="more than one sweep"):
        sweep.main(["--merge", a, a, "--out", str(tmp_path / "twice")])


def test_one_problem_end_to_end_on_a_fake_library(monkeypatch):
    """sweep_problem's orchestration with the GPU parts replaced: kforge's plans measured first, index 0 of every
    form, then the rest of each form's list as far as the library offered it; the tiers and ratios from that."""
    import types

    import kforge._core as core

    hosted = types.SimpleNamespace(problem=types.SimpleNamespace(path=REPO / "p.py"), graph={}, sets=[], refs=[],
                                   params=[], strict_tolerance=[], resident_tolerance=lambda: [], baseline_ms=lambda which: 5.0,
                                   pointers=lambda: ([], [], []))
    monkeypatch.setattr(sweep, "host_task", lambda path, compile_baseline: hosted)
    best = {"kernels": {"mm": {"strategy": "library", "precision": "fp16x3", "algo": 0, "chunks": 2}}}
    plan = {"kernels": [{"group": "mm", "kind": "cublaslt"}, {"group": "mm", "kind": "cublaslt"}], "schedule": best}
    def optimize(*a):  # positions as src/python_module/core.cpp's optimize takes them
        budget, db, eager, compile_ms, policy, strict_tolerance = a[5], a[6], a[7], a[8], a[12], a[15]
        assert (budget, db, eager, compile_ms, policy, strict_tolerance) == (7, ":memory:", 5.0, 0.0, "local", [])
        return json.dumps({"plan": plan, "tier": "strict", "candidates": 7, "native": {"median_ms": 1.0}})

    monkeypatch.setattr(core, "optimize", optimize)
    batches = []

    def measure(graph, name, sets, refs, params, db, schedules, strict_tolerance, versions, eager_ms):
        assert db == ":memory:" and strict_tolerance == [] and eager_ms == 5.0 and versions.startswith("torch ")
        batches.append([json.loads(s) for s in schedules])
        out = []
        for s in batches[-1]:
            ks = s["kernels"]["mm"]
            p, algo = ks["precision"], ks["algo"]
            ms = {"fp32": 3.0 - 0.5 * algo, "fp16x3": 1.0 - 0.1 * algo}.get(p)
            ev = {"strict": ms is not None, "relaxed": ms is not None or p == "fp16", "tier": "strict" if ms else "failed",
                  "native": {"median_ms": ms or (0.2 if p == "fp16" else 0.0)},
                  "library": [{"group": "mm", "library": "cublaslt", "algo": min(algo, 2), "offered": 3}]}
            ev["tier"] = "strict" if ev["strict"] else "relaxed" if ev["relaxed"] else "failed"
            out.append({"key": json.dumps(s), "repeat": False, "eval": ev})
        return json.dumps({"gpu": "fake", "copy_gbs": 1.0, "results": out})

    monkeypatch.setattr(core, "measure_schedules", measure)
    row = sweep.sweep_problem("p.py", 7, ":memory:", "local", 1)
    assert batches[0][0] == best and batches[0][1] == best, "kforge's plans first"
    assert len(batches[0]) == 2 + 5, "index 0 of fp32, tf32, fp16, fp16x3 and fp16x3 in the plan's 2 pieces"
    assert [len(b) for b in batches] == [7, 5, 5], "then index 1 of each form, then index 2: the library offered 3"
    assert row["family"] == "product" and row["calls"] == 15
    assert row["call_strict"] == {"group": "mm", "precision": "fp32", "algo": 2, "ms": 2.0}
    assert row["call_relaxed"]["precision"] == "fp16" and row["call_relaxed"]["ms"] == 0.2
    assert row["x_call_strict"] == 2.0 and row["fp16x3_strict"]["ms"] == pytest.approx(0.8)
    assert sweep.table_row(row).startswith("| p | 1.000 | library fp16x3 algo 0 2 pieces | 2.000 | fp32 algo 2 | 2.00 |")

    # A library that offers more than it can use (cuDNN counts every precision's engines) clamps the index to its
    # last usable one: the walk stops there and keeps no repeat.
    batches.clear()
    def measure_clamped(*a):
        out = json.loads(measure(*a))
        for r in out["results"]:
            r["eval"]["library"][0]["offered"] = 12
        return json.dumps(out)
    monkeypatch.setattr(core, "measure_schedules", measure_clamped)
    row = sweep.sweep_problem("p.py", 7, ":memory:", "local", 1)
    assert [len(b) for b in batches] == [7, 5, 5, 5], "indices 1, 2 and the clamped 3 of each form"
    assert row["calls"] == 15 and max(m["algo"] for m in row["measurements"] if m["label"] == "call") == 2
