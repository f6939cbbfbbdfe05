"""kforge.warm_compile compiles each problem as the suite's baselines will run it (no gradients; PyTorch's defaults,
then TF32 off), and a problem that fails does not stop the others."""
import torch

from kforge import warm_compile

PROBLEM = '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4, 4)]
def get_init_inputs():
    return []
'''


def test_compiles_with_the_baselines_settings_and_survives_a_broken_problem(tmp_path, monkeypatch):
    good = tmp_path / "good.py"
    good.write_text(PROBLEM)
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('not a problem')\n")
    calls = []

    def fake_compile(model):
        def run(*inputs):
            calls.append((torch.is_grad_enabled(), torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32))
            return model(*inputs)
        return run

    monkeypatch.setattr(torch, "compile", fake_compile)
    torch.backends.cudnn.allow_tf32 = True
    lines = warm_compile.compile_share([str(broken), str(good)], "cpu")
    assert lines[0].startswith("broken: failed") and lines[1].startswith("good: ")
    assert calls == [(False, torch.backends.cuda.matmul.allow_tf32, True), (False, False, False)]
