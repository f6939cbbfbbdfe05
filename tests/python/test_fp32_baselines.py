"""The strict tier's baselines (kbtime.check_and_time), GPU-free: where eager or torch.compile as PyTorch runs them
by default (cuDNN convolutions in TF32) miss the strict tier on some set, both are timed again with TF32 off in the
same interleaved run, and their own tiers found on every set; elsewhere the defaults stand for them. The kb timer,
the plan and the problem are stand-ins; the TF32 of the defaults is emulated on the CPU (inputs rounded to 10
mantissa bits while PyTorch allows TF32)."""
import importlib.util

import pytest
import torch

from conftest import REPO
from kforge import kbtime, session
from kforge.bridge import reference_outputs, set_tolerance
from kforge.kbtime import HiddenSets, check_and_time


def tf32(x):
    return ((x.contiguous().view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


class Product(torch.nn.Module):
    """a @ b, in TF32 where PyTorch allows it (as its cuDNN convolutions run by default) when `follows_tf32`.
    Remembers the flag each call saw."""

    def __init__(self, follows_tf32: bool):
        super().__init__()
        self.follows_tf32, self.saw = follows_tf32, []

    def forward(self, a, b):
        allowed = torch.backends.cudnn.allow_tf32
        self.saw.append(allowed)
        return tf32(a) @ tf32(b) if self.follows_tf32 and allowed else a @ b


class Problem:
    def __init__(self, scale):
        self.scale = scale

    def draw_inputs(self, seed, device):
        g = torch.Generator().manual_seed(seed % 1000)
        return [torch.randn(32, 512, generator=g) * self.scale, torch.randn(512, 32, generator=g) * self.scale]


class Plan:
    """kforge's plan, exact float32."""
    def __call__(self, inputs, params, out=None):
        return [inputs[0] @ inputs[1]]


def hidden(model):
    """Sets as the bridge draws them: unit range, x0.1, x4 (references and tolerances from reference_outputs)."""
    sets = [Problem(scale).draw_inputs(k + 1, "cpu") for k, scale in enumerate((1.0, 0.1, 4.0))]
    refs, tolerances = zip(*(reference_outputs(model, s) for s in sets))
    return HiddenSets(sets, list(refs), [set_tolerance(t) for t in tolerances])


@pytest.fixture
def timed(monkeypatch):
    """time_interleaved calls each callable once (on record: which ran in the one run), and answers a median."""
    runs = []

    def time_interleaved(fns):
        runs.append(list(fns))
        for fn in fns.values():
            fn()
        return {name: {"median_ms": 1.0 + i} for i, name in enumerate(fns)}
    monkeypatch.setattr(kbtime.timing, "time_interleaved", time_interleaved)
    monkeypatch.setattr(kbtime, "poisoned", lambda kforge: None)
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default
    yield runs
    torch.backends.cudnn.allow_tf32 = saved


def test_where_the_defaults_miss_the_strict_tier_tf32_off_baselines_are_timed_beside_them(timed):
    model = Product(follows_tf32=True)
    kb = check_and_time(Problem(1.0), model, model, Plan(), [], Problem(1.0).draw_inputs(7, "cpu"), hidden(model))
    assert timed == [["eager", "compile", "kforge", "eager_fp32", "compile_fp32"]], "one interleaved run"
    assert kb["fp32_baselines"] == "timed"
    assert kb["baseline_tiers"]["eager"] != "strict" and kb["baseline_tiers"]["compile"] != "strict"
    assert kb["baseline_tiers"]["eager_fp32"] == kb["baseline_tiers"]["compile_fp32"] == "strict"
    assert kb["check"]["strict"] and kb["eager_fp32"]["median_ms"] == 4.0
    # In the timing run: the defaults with TF32 allowed, the strict baselines without; the default comes back.
    assert model.saw[-4:] == [True, True, False, False] and torch.backends.cudnn.allow_tf32


def test_where_the_defaults_hold_the_strict_tier_they_are_its_baselines_untimed_again(timed):
    model = Product(follows_tf32=False)
    kb = check_and_time(Problem(1.0), model, model, Plan(), [], Problem(1.0).draw_inputs(7, "cpu"), hidden(model))
    assert timed == [["eager", "compile", "kforge"]]
    assert kb["fp32_baselines"] == "defaults"
    assert kb["eager_fp32"] == kb["eager"] and kb["compile_fp32"] == kb["compile"]
    assert kb["baseline_tiers"]["eager_fp32"] == kb["baseline_tiers"]["eager"] == "strict"


def test_without_hidden_sets_only_the_defaults_are_timed(timed):
    model = Product(follows_tf32=True)
    kb = check_and_time(Problem(1.0), model, model, Plan(), [], Problem(1.0).draw_inputs(7, "cpu"))
    assert timed == [["eager", "compile", "kforge"]] and "fp32_baselines" not in kb


def test_the_report_gives_the_strict_plan_its_speedup_over_the_better_tf32_off_baseline():
    kb = {"eager_fp32": {"median_ms": 3.0}, "compile_fp32": {"median_ms": 2.0}, "fp32_baselines": "timed",
          "baseline_tiers": {"eager_fp32": "strict", "compile_fp32": "strict"}}
    r = session.fp32_baselines_report(kb, 1.0, "strict")
    assert r == {"fp32_baselines": "timed", "eager_fp32_ms": 3.0, "compile_fp32_ms": 2.0, "eager_fp32_tier": "strict",
                 "compile_fp32_tier": "strict", "speedup_best_fp32": 2.0}
    assert session.fp32_baselines_report(kb, 1.0, "relaxed")["speedup_best_fp32"] is None  # no strict plan
    row = session.row({"name": "conv", "tier": "strict", "kforge_ms": 1.0, **r})
    assert "| 2.000 | 2.00 | kb |" in row


def runner():
    spec = importlib.util.spec_from_file_location("run_suite", REPO / "bench" / "run_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_suite_table_counts_the_strict_tier_against_tf32_off_baselines_and_widened_tolerances():
    rs = runner()
    base = {"tier": "strict", "speedup_best": 0.8, "speedup_eager": 1.0, "speedup_compile": 1.0, "kforge_ms": 1.0,
            "eager_ms": 0.8, "compile_ms": 0.9, "bandwidth_gbs": None, "pct_copy_bw": None, "flops": None}
    rows = [{**base, "problem": "conv", "eager_fp32_ms": 1.5, "compile_fp32_ms": 1.2, "fp32_baselines": "timed",
             "speedup_best_fp32": 1.2, "strict_tolerance_widest": 1e-4},
            {**base, "problem": "gemm", "eager_fp32_ms": 0.8, "compile_fp32_ms": 0.9, "fp32_baselines": "defaults",
             "speedup_best_fp32": 0.8, "strict_tolerance_widest": 2.2e-3},
            {**base, "problem": "old"}]  # a row of an older report: no such fields
    s = rs.summarise(rows)
    assert s["faster_strict_tier_fp32_baselines"] == 1 and s["strict_with_fp32_baselines"] == 2
    assert s["fp32_baselines_timed"] == 1 and s["strict_tolerance_widened"] == 1
    text = rs.table(rows, s)
    assert "| 1.200 | 1.20 |" in text and "| 0.800= | 0.80 |" in text and "| - | - |" in text
    assert "strict tier, faster than the better of eager/compile with TF32 off (PyTorch's fp32): 1 of 2" in text
    assert "strict tolerance widened to fp32's own error" in text and "on 1 problems (largest 0.0022)" in text
    assert "per tier, faster than the better of eager/compile: strict tier (1e-4) 0" in text  # the defaults' line stays


def test_the_suite_table_names_strict_plans_on_reduced_precision_arithmetic():
    rs = runner()
    base = {"tier": "strict", "speedup_best": 1.1, "speedup_eager": 1.1, "speedup_compile": 1.1, "kforge_ms": 1.0,
            "eager_ms": 1.1, "compile_ms": 1.2, "bandwidth_gbs": None, "pct_copy_bw": None, "flops": None}
    # Through make_row, as a report becomes a suite row (a field it does not copy is lost to the table).
    reports = [("conv_sum", {**base, "below_fp32": True}),    # an fp16 plan that passed every set's strict check
               ("conv_norm", {**base, "below_fp32": False}),  # fp16x3
               ("tf32_relaxed", {**base, "tier": "relaxed", "below_fp32": True}),  # not a strict plan
               ("old", base)]  # an older report: no such field
    rows = [rs.make_row(name, f"{name}.py", report, 0, False, 1.0, None, "log", 60) for name, report in reports]
    s = rs.summarise(rows)
    assert s["strict_below_fp32"] == ["conv_sum"]
    assert "- strict plans on TF32 or fp16 arithmetic (passing the strict tier on every input set, as a baseline in " \
           "TF32 may): 1 (conv_sum)" in rs.table(rows, s)
