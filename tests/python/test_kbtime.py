"""kbtime's correctness check (the timing itself needs a GPU and kforge._core)."""
import math

import torch

from kforge import kbtime
from kforge.kbtime import baseline_tiers, baseline_tiers_on_sets, compare, tier_of, worst_tier

TIERS = {"strict": 1e-4, "relaxed": 1e-2}


def test_exact_match_passes_both_tiers():
    x = torch.randn(8, 8)
    assert compare([x.clone()], [x], TIERS) == {"strict": True, "relaxed": True, "max_abs_err": 0.0}


def test_small_error_passes_relaxed_only():
    x = torch.zeros(8, 8)
    result = compare([x + 1e-3], [x], TIERS)
    assert result["strict"] is False and result["relaxed"] is True
    assert math.isclose(result["max_abs_err"], 1e-3, rel_tol=1e-3)


def test_nan_and_wrong_shape_fail():
    x = torch.zeros(4)
    got = x.clone()
    got[2] = math.nan
    assert compare([got], [x], TIERS) == {"strict": False, "relaxed": False, "max_abs_err": None}
    assert compare([torch.zeros(5)], [x], TIERS) == {"strict": False, "relaxed": False, "max_abs_err": None}
    assert compare([x.long()], [x], TIERS)["strict"] is False


def test_every_output_counts():
    x = torch.ones(3)
    assert compare([x, x], [x, x * 2], TIERS)["relaxed"] is False


def test_tier_of_names_the_tightest_tier_passed():
    x = torch.zeros(8)
    assert tier_of(compare([x.clone()], [x], TIERS)) == "strict"
    assert tier_of(compare([x + 1e-3], [x], TIERS)) == "relaxed"
    assert tier_of(compare([x + 1.0], [x], TIERS)) == "none"


def test_baseline_tiers_judge_each_baseline_as_it_runs():
    x = torch.randn(16)
    expected = [x * 2]

    def in_place(t):  # a baseline that writes its input must not change what the next one sees
        return t.mul_(2)

    tiers = baseline_tiers({"eager": in_place, "compile": lambda t: t * 2 + 1e-3, "wrong": lambda t: t}, [x],
                           expected, TIERS)
    assert tiers == {"eager": "strict", "compile": "relaxed", "wrong": "none"}


def test_a_baseline_holds_a_tier_only_on_every_hidden_set():
    sets = [[torch.linspace(-1, 1, 16) * scale] for scale in (1.0, 4.0, 0.1)]  # as the hidden sets' ranges
    refs = [[s[0] * 2] for s in sets]
    # Off by 1e-3 only on the largest set: relaxed there, so relaxed over all.
    loose_on_large = lambda t: t * 2 + (1e-3 if float(t.abs().max()) > 3 else 0.0)
    tiers = baseline_tiers_on_sets({"eager": lambda t: t * 2, "compile": loose_on_large}, sets, refs, TIERS)
    assert tiers == {"eager": "strict", "compile": "relaxed"}
    assert worst_tier(["strict", "none", "relaxed"]) == "none" and worst_tier([]) == "strict"


def test_a_baseline_that_fails_when_run_again_is_left_out():
    """torch.compile recompiling under TF32 off can fail where its first compile did not: that baseline is left out
    of the timing (kbtime.runs_on_clones), the problem goes on; a run is given clones (a model may write its inputs)."""
    x = torch.ones(3)

    def writes_its_input(t):
        t.add_(1)
        return t

    def broken(t):
        raise RuntimeError("recompiled and failed")
    assert kbtime.runs_on_clones("eager_fp32", writes_its_input, [x])
    assert torch.equal(x, torch.ones(3)), "the run saw a clone"
    assert not kbtime.runs_on_clones("compile_fp32", broken, [x])
