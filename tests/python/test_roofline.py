"""The roofline arithmetic of the reports (kforge.roofline) and its columns in the suite table."""
import importlib.util
from pathlib import Path

import pytest

from kforge import roofline

REPO = Path(__file__).resolve().parents[2]


def test_the_floor_is_the_slower_of_memory_and_arithmetic():
    # 4 GB at 4000 GB/s: 1 ms; 2 TFLOP at 50 TFLOP/s: 40 ms.
    assert roofline.floor(4e9, 2e12, 4000, 50) == pytest.approx(40.0)
    assert roofline.floor(4e9, 0, 4000, 0) == pytest.approx(1.0)
    assert roofline.floor(4e9, 1e9, 4000, 50) == pytest.approx(1.0)  # the arithmetic hides under the bytes


def test_memory_bound_reports_measure_no_matmul_rate_and_tf32_plans_use_the_relaxed_ceiling():
    r = roofline.report(4e9, 0.0, 4000, {"kernels": [{"schedule": {"strategy": "flat"}}]}, 2.0)
    assert r["matmul_tflops"] is None and r["floor_ms"] == pytest.approx(1.0) and r["pct_roofline"] == pytest.approx(50)
    assert roofline.below_fp32({"kernels": [{"schedule": {"strategy": "library", "precision": "tf32"}}]})
    assert not roofline.below_fp32({"kernels": [{"schedule": {"strategy": "library", "precision": "fp32"}}]})
    assert roofline.below_fp32({"kernels": [{"schedule": {"strategy": "library", "precision": "fp16", "layout": "nhwc"}}]})
    assert roofline.below_fp32({"kernels": [{"schedule": {"strategy": "library", "precision": "bf16", "layout": "nhwc"}}]})


def test_the_suite_table_shows_the_roofline_columns():
    spec = importlib.util.spec_from_file_location("run_suite", REPO / "bench" / "run_suite.py")
    run_suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_suite)
    report = {"tier": "strict", "eager_ms": 3.0, "compile_ms": 2.5, "kforge_ms": 2.0, "flops": 2.2e12,
              "floor_ms": 1.5, "pct_roofline": 75.0, "bandwidth_gbs": 100.0, "copy_bandwidth_gbs": 4000.0}
    row = run_suite.make_row("01_square", "01_square.py", report, 0, False, 1.0, None, "log", 60)
    text = run_suite.table([row], run_suite.summarise([row]))
    assert "| GFLOP | floor ms | % of roofline |" in text
    assert "| 2200.0 | 1.500 | 75 |" in text



def test_the_suite_table_and_summary_give_both_tiers():
    spec = importlib.util.spec_from_file_location("run_suite", REPO / "bench" / "run_suite.py")
    run_suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_suite)
    # A convolution: the strict plan (fp32) loses to TF32 baselines, the relaxed tier's TF32 plan wins.
    conv = {"tier": "strict", "eager_ms": 1.0, "compile_ms": 1.1, "kforge_ms": 3.0, "relaxed_tier": "relaxed",
            "relaxed_ms": 0.8, "relaxed_speedup_best": 1.25}
    # A reduction without library steps: one plan serves both tiers.
    row_op = {"tier": "strict", "eager_ms": 2.0, "compile_ms": 1.5, "kforge_ms": 1.2, "relaxed_tier": "strict",
              "relaxed_ms": 1.2, "relaxed_speedup_best": 1.25}
    rows = [run_suite.make_row(n, n + ".py", r, 0, False, 1.0, None, "log", 60)
            for n, r in (("conv", conv), ("softmax", row_op))]
    rows.append(run_suite.make_row("timed_out", "t.py", conv, None, True, 60.0, None, "log", 60))
    s = run_suite.summarise(rows)
    assert s["faster_strict_tier"] == 1 and s["faster_relaxed_tier"] == 2
    assert s["geomean_speedup_best_relaxed_tier"] == pytest.approx(1.25)
    text = run_suite.table(rows, s)
    assert "| tier | relaxed ms | x best (relaxed) |" in text
    assert "| strict | 0.800 | 1.25 |" in text
    assert "strict tier (1e-4) 1, relaxed tier (1e-2, TF32 allowed; its fastest plan) 2" in text
    # A tie at the third decimal counts as faster (KernelBench's fast_1) but not as clearly faster.
    tie = {"tier": "strict", "eager_ms": 2.690, "compile_ms": 2.743, "kforge_ms": 2.6899}
    s = run_suite.summarise(rows[:2] + [run_suite.make_row("tie", "tie.py", tie, 0, False, 1.0, None, "log", 60)])
    assert s["faster_than_best_baseline"] == 2 and s["clearly_faster_than_best_baseline"] == 1
    assert "by 2% or more: 1" in run_suite.table(rows, s)


def test_split_precision_plans_take_the_faster_of_fp32_and_a_third_of_tf32(monkeypatch):
    monkeypatch.setattr(roofline, "_ceilings", {"strict": 50.0, "relaxed": 400.0})
    plan = {"kernels": [{"schedule": {"strategy": "mma", "precision": "tf32x3"}}]}
    r = roofline.report(1e6, 2e12, 4000, plan, 20.0)
    assert r["matmul_tier"] == "strict (split tf32)" and r["matmul_tflops"] == pytest.approx(400.0 / 3)
    assert not roofline.below_fp32(plan), "split precision is judged by the strict tier"
    plain = roofline.report(1e6, 2e12, 4000, {"kernels": [{"schedule": {"strategy": "mma", "precision": "tf32"}}]}, 20.0)
    assert plain["matmul_tier"] == "relaxed" and plain["matmul_tflops"] == pytest.approx(400.0)


def test_fp16_split_plans_take_the_faster_of_fp32_and_a_third_of_fp16(monkeypatch):
    monkeypatch.setattr(roofline, "_ceilings", {"strict": 50.0, "relaxed": 400.0, "relaxed (fp16)": 750.0})
    plan = {"kernels": [{"schedule": {"strategy": "library", "precision": "fp16x3"}}]}
    r = roofline.report(1e6, 2e12, 4000, plan, 20.0)
    assert r["matmul_tier"] == "strict (split fp16)" and r["matmul_tflops"] == pytest.approx(250.0)
    assert not roofline.below_fp32(plan), "split precision is judged by the strict tier"
    single = {"kernels": [{"schedule": {"strategy": "library", "precision": "fp16"}}]}
    assert roofline.below_fp32(single) and roofline.report(1e6, 2e12, 4000, single, 20.0)["matmul_tier"] == "relaxed (fp16)"
