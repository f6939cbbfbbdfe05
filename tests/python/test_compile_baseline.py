"""torch.compile as a baseline (kforge.bridge.compiled_model), GPU-free: where inductor cannot compile a model the
problem still runs, kforge compared with eager alone and the reason kept; where it compiles, the compiled model has
already run once (its compile is not inside a timed trial)."""
import torch

from kforge import bridge


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_a_model_inductor_cannot_compile_gives_no_compiled_baseline_and_says_why(monkeypatch):
    def broken(model):
        def run(*args):
            raise TypeError("list indices must be integers or slices, not NoneType\nmore of the stack")
        return run
    monkeypatch.setattr(torch, "compile", broken)
    compiled, failed = bridge.compiled_model(Double(), [torch.ones(3)])
    assert compiled is None
    assert failed == "TypeError: list indices must be integers or slices, not NoneType"


def test_a_compiled_model_has_run_once_before_it_is_timed(monkeypatch):
    calls = []

    def stand_in(model):
        def run(*args):
            calls.append(args)
            return model(*args)
        return run
    monkeypatch.setattr(torch, "compile", stand_in)
    compiled, failed = bridge.compiled_model(Double(), [torch.ones(3)])
    assert failed is None and len(calls) == 1
    assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 2.0))


def test_the_best_baseline_is_the_better_of_those_measured():
    assert bridge.best_baseline_ms(1.0, None) == 1.0
    assert bridge.best_baseline_ms(1.0, 0.5) == 0.5
    assert bridge.ratio(None, 2.0) is None and bridge.ratio(1.0, 2.0) == 0.5
