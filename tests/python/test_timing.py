"""The kb timer. Its statistics are checked everywhere; the timing itself where a GPU is present, and without
one it must refuse rather than time the CPU under a GPU protocol's name."""
import pytest
import torch

from kforge import timing


def test_stats():
    s = timing.stats([1.0, 2.0, 3.0, 10.0])
    assert s == {"mean_ms": 4.0, "median_ms": 2.5, "min_ms": 1.0, "std_ms": pytest.approx(3.5355339), "trials": 4}


def test_protocol_minimums():
    with pytest.raises(ValueError, match="kb protocol"):
        timing.time_callable(lambda: None, trials=10)
    with pytest.raises(ValueError, match="kb protocol"):
        timing.time_callable(lambda: None, warmup=1)


def test_timing_on_this_machine():
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="needs a CUDA device"):
            timing.time_callable(lambda: None)
        return
    x = torch.randn(1 << 20, device="cuda")
    calls = []
    s = timing.time_interleaved({"a": lambda: calls.append("a") or x.sum(), "b": lambda: calls.append("b") or x * 2})
    assert s["a"]["trials"] == s["b"]["trials"] == 20 and s["a"]["min_ms"] > 0
    assert calls[6:10] == ["a", "b", "a", "b"]  # after 3 warm-ups each, trials take turns
