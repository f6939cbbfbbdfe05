"""kforge.library_sweep's bookkeeping, GPU-free: which groups of a real lowered plan it sweeps, the schedules it
writes for them (they lower), where it stops along cuBLASLt's list, and which call counts for a tier."""
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
    groups = sweep.product_groups(plan)
    assert len(groups) == 1, "one product; the layer norm's kernel is not swept"
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    for precision, chunks in (("fp32", 1), ("tf32", 1), ("fp16", 1), ("fp16x3", 1), ("fp16x3", 4)):
        s = sweep.with_call(plan["schedule"], groups[0], precision, 5, chunks)
        lowered = lower_with(tmp_path / "graph.json", s, tmp_path)
        steps = [k for k in lowered["kernels"] if k.get("kind") == "cublaslt"]
        assert steps and all(k["library"]["precision"] == precision and k["library"]["algo"] == 5 for k in steps)
        assert len(steps) == chunks, "an fp16x3 call in pieces is one cuBLASLt step a piece"
        assert sweep.product_groups(lowered) == groups
    # The rest of the plan is kept: only the swept group's schedule changes.
    other = {"fuse_rows": False, "kernels": {"elsewhere": {"strategy": "block"}}}
    assert sweep.with_call(other, groups[0], "fp32", 0)["kernels"]["elsewhere"] == {"strategy": "block"}
    assert sweep.with_call(other, groups[0], "fp32", 0)["fuse_rows"] is False
    assert "kernels" in other and groups[0] not in other["kernels"], "the caller's schedule is not modified"


def test_mma_groups_are_products_too():
    plan = {"kernels": [{"group": "matmul", "kind": "nvrtc"}, {"group": "row", "kind": "nvrtc"}],
            "schedule": {"kernels": {"matmul": {"strategy": "mma", "precision": "tf32x3"}, "row": {"strategy": "block"}}}}
    assert sweep.product_groups(plan) == ["matmul"]


def test_stops_where_cublaslt_offers_no_more():
    result = {"library": [{"group": "matmul", "library": "cublaslt", "algo": 0, "offered": 8},
                          {"group": "matmul", "library": "cublaslt", "algo": 0, "offered": 3},  # a later piece: fewer
                          {"group": "other", "library": "cublaslt", "algo": 0, "offered": 1}]}
    assert sweep.offered(result, "matmul") == 3
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
    rows = [{"problem": "a", "x_call_strict": 3.0, "call_strict": {}, "x_call_relaxed": 0.95, "call_relaxed": {}},
            {"problem": "b", "x_call_strict": 0.8, "call_strict": {}, "x_call_relaxed": 1.2, "call_relaxed": {}},
            {"problem": "c", "x_call_strict": None, "call_strict": None, "x_call_relaxed": 1.0, "call_relaxed": {}},
            {"problem": "d", "error": "no correct plan"},
            {"problem": "e", "no_product": "1 kernel(s) of kind nvrtc", "kforge_strict_ms": 1.0}]
    lines = "\n".join(sweep.summary(rows))
    assert "problems: 5 (1 failed; 1 whose plan has no matrix product left)" in lines
    assert "strict tier: kforge at >= 90% of the best cuBLASLt call's speed on 1 of 2" in lines
    assert "relaxed tier: kforge at >= 90% of the best cuBLASLt call's speed on 3 of 3" in lines
    assert "no single cuBLASLt call (fp32, tf32 or fp16, any offered algorithm) passes on 1" in lines
    assert sweep.table_row(rows[3]).startswith("| d | failed: no correct plan")
    assert sweep.table_row(rows[4]).startswith("| e | 1.000 | no product: 1 kernel(s) of kind nvrtc |")
