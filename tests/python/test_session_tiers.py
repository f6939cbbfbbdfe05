"""Both tiers in a problem's report (kforge.session.relaxed_tier_report), GPU-free: the kb timing and the plan
runner are stand-ins, so what is pinned is the bookkeeping: which plan stands for the relaxed tier, which
baseline times its ratios use, and what happens when its fresh-draw check fails."""
import pytest

import kforge._core as core
from kforge import session

# One set, on the GPU (none streamed from host memory): the fresh-draw check alone decides.
HOSTED = session.HostedTask(problem=None, model=None, graph={}, params=[], sets=[[]], refs=[[]], strict_tolerance=[[]],
                            flags={}, base={}, resident=1)
BEST = {"tier": "strict", "kforge_ms": 3.0, "speedup_eager": 0.5, "speedup_compile": 0.4, "speedup_best": 0.4}


@pytest.fixture
def timed(monkeypatch):
    """check_and_time returns what the test sets; the runner and launcher are inert."""
    answer = {}
    monkeypatch.setattr(core, "Runner", lambda plan_json: plan_json)
    monkeypatch.setattr(session, "KforgeFunction", lambda runner, graph: runner)
    monkeypatch.setattr(session, "check_and_time", lambda *args, **kwargs: answer["kb"])
    return answer


def kb(eager, compile_ms, ours, strict, relaxed):
    return {"eager": {"median_ms": eager}, "compile": {"median_ms": compile_ms}, "kforge": {"median_ms": ours},
            "check": {"strict": strict, "relaxed": relaxed}}


def relaxed_result(tier="relaxed"):
    return {"relaxed": {"plan": {"schedule": {"kernels": {"conv": {"precision": "tf32"}}}}, "native": {"median_ms": 0.9},
                        "reward": 1.0, "tier": tier}}


def test_without_another_plan_the_best_plan_stands_for_both_tiers(timed, tmp_path):
    r = session.relaxed_tier_report({}, HOSTED, tmp_path, BEST)
    assert r == {"relaxed_tier": "strict", "relaxed_ms": 3.0, "relaxed_speedup_eager": 0.5,
                 "relaxed_speedup_compile": 0.4, "relaxed_speedup_best": 0.4}
    assert session.relaxed_tier_report({}, HOSTED, tmp_path, {"tier": "failed"}) == {"relaxed_tier": "failed"}


def test_a_faster_relaxed_plan_is_timed_beside_its_own_baselines(timed, tmp_path):
    timed["kb"] = kb(eager=1.0, compile_ms=1.2, ours=0.8, strict=False, relaxed=True)
    r = session.relaxed_tier_report(relaxed_result(), HOSTED, tmp_path, BEST)
    assert r["relaxed_tier"] == "relaxed" and r["relaxed_ms"] == 0.8 and r["relaxed_native_ms"] == 0.9
    assert r["relaxed_speedup_best"] == pytest.approx(1.0 / 0.8), "against the baselines of its own timing run"
    assert r["relaxed_speedup_compile"] == pytest.approx(1.2 / 0.8)
    assert (tmp_path / "relaxed_plan.json").exists()


def test_a_relaxed_plan_failing_its_fresh_check_gives_way_to_the_best_plan(timed, tmp_path):
    timed["kb"] = kb(eager=1.0, compile_ms=1.2, ours=0.8, strict=False, relaxed=False)
    r = session.relaxed_tier_report(relaxed_result(), HOSTED, tmp_path, BEST)
    assert r["relaxed_tier"] == "strict" and r["relaxed_ms"] == 3.0
    assert "failed the check on a fresh draw" in r["relaxed_error"]


def test_a_relaxed_plan_failing_a_streamed_set_gives_way_to_the_best_plan(timed, tmp_path, monkeypatch):
    """A set kept in host memory (footprint.py) was never seen by the search: the plan must pass it as well."""
    timed["kb"] = kb(eager=1.0, compile_ms=1.2, ours=0.8, strict=False, relaxed=True)
    monkeypatch.setattr(session, "plan_tier_on_sets", lambda kforge, params, hidden: "none")
    r = session.relaxed_tier_report(relaxed_result(), HOSTED, tmp_path, BEST)
    assert r["relaxed_tier"] == "strict" and r["relaxed_ms"] == 3.0
    monkeypatch.setattr(session, "plan_tier_on_sets", lambda kforge, params, hidden: "relaxed")
    r = session.relaxed_tier_report(relaxed_result(tier="strict"), HOSTED, tmp_path, BEST)
    assert r["relaxed_tier"] == "relaxed", "strict on the fresh draw, relaxed on a streamed set: relaxed"


def test_without_torch_compile_the_relaxed_plan_is_compared_with_eager(timed, tmp_path):
    """torch.compile failed on the model (bridge.compiled_model): the timing run has eager alone."""
    timed["kb"] = kb(eager=1.0, compile_ms=None, ours=0.8, strict=False, relaxed=True)
    del timed["kb"]["compile"]
    r = session.relaxed_tier_report(relaxed_result(), HOSTED, tmp_path, BEST)
    assert r["relaxed_speedup_best"] == pytest.approx(1.0 / 0.8)
    assert r["relaxed_speedup_compile"] is None
