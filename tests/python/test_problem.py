"""Loading problem files: what a KernelBench file must define, and errors that name the file."""
import pytest
import torch

from kforge.errors import ImportProblemError
from kforge.problem import load_problem
from op_cases import Case

GOOD = Case("good", "self.ln(x)", ["layer_norm"], init="self.ln = nn.LayerNorm(8)").source()


def test_loads_and_builds_with_fixed_seed(write_problem):
    problem = load_problem(write_problem(GOOD))
    a, b = problem.build_model(), problem.build_model()
    assert torch.equal(a.ln.weight, b.ln.weight) and a.training  # KernelBench models stay in training mode


def test_inputs_follow_the_seed(write_problem):
    problem = load_problem(write_problem(GOOD))
    assert torch.equal(problem.draw_inputs(7, "cpu")[0], problem.draw_inputs(7, "cpu")[0])
    assert not torch.equal(problem.draw_inputs(7, "cpu")[0], problem.draw_inputs(8, "cpu")[0])


def test_same_file_name_in_two_folders_stays_apart(tmp_path):
    paths = []
    for folder, dim in (("a", 8), ("b", 16)):
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / "problem.py"
        path.write_text(GOOD.replace("nn.LayerNorm(8)", f"nn.LayerNorm({dim})"))
        paths.append(path)
    first, second = load_problem(paths[0]), load_problem(paths[1])
    assert first.build_model().ln.weight.shape == (8,) and second.build_model().ln.weight.shape == (16,)


@pytest.mark.parametrize("source, reason", [
    ("import torch\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n", "defines no Model"),
    (GOOD.replace("def get_init_inputs", "def other"), "defines no get_init_inputs"),
    (GOOD + "\ndef broken(:\n", "syntax error at line"),
    (GOOD + "\nraise RuntimeError('boom')\n", "loading failed: RuntimeError: boom"),
    (GOOD.replace("return [torch.randn(4, 8)]", "return ['x']"), "get_inputs() item 0 is a str, not a tensor or a Python number"),
    (GOOD.replace("return [torch.randn(4, 8)]", "return [torch.randn(4, 8), float(torch.rand(()))]"),
     "get_inputs()'s Python numbers change between draws"),
    (GOOD.replace("super().__init__()", "super().__init__()\n        raise ValueError('bad size')"),
     "Model(*get_init_inputs()) failed: ValueError: bad size"),
])
def test_bad_problem_names_file_and_reason(write_problem, source, reason):
    path = write_problem(source)
    with pytest.raises(ImportProblemError) as e:
        problem = load_problem(path)
        problem.draw_inputs(0, "cpu")
        problem.draw_inputs(1, "cpu")
        problem.build_model()
    assert str(path) in str(e.value) and reason in str(e.value)


def test_missing_file():
    with pytest.raises(ImportProblemError, match="no such file"):
        load_problem("/nonexistent/problem.py")


NUMBERS = """import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
    def forward(self, x, scale, dim, y):
        return torch.softmax(self.ln(x) * scale + y, dim=dim)
def get_inputs():
    return [torch.randn(4, 8), 0.5, 1, torch.randn(4, 8)]
def get_init_inputs():
    return []
"""


def test_python_numbers_among_the_inputs_are_constants_bound_into_the_model(write_problem):
    problem = load_problem(write_problem(NUMBERS))
    model = problem.build_model()
    x, y = problem.draw_inputs(3, "cpu")
    assert type(model).__name__ == "Model" and set(model.state_dict()) == {"ln.weight", "ln.bias"}
    unbound = problem.module.Model()
    unbound.load_state_dict(model.state_dict())
    assert torch.equal(model(x, y), unbound(x, 0.5, 1, y))


def test_any_python_number_binds_and_the_forward_keeps_its_modules_names(write_problem):
    # -inf, a numpy float (a float subclass whose repr names numpy) and math.sqrt imported by name (torch.fx patches
    # the forward's globals) all import.
    problem = load_problem(write_problem("""import torch
import torch.nn as nn
from math import sqrt
import numpy as np
class Model(nn.Module):
    def forward(self, x, lo, scale):
        return torch.clamp(x, min=lo) * scale / sqrt(x.size(-1))
def get_inputs():
    return [torch.randn(4, 8), float('-inf'), np.float64(0.5)]
def get_init_inputs():
    return []
"""))
    from kforge import fx_to_ir
    model = problem.build_model()
    x, = problem.draw_inputs(1, "cpu")
    assert torch.equal(model(x), x * 0.5 / 8 ** 0.5)
    graph = fx_to_ir.convert(model, [x], problem.path)
    assert [n["op"] for n in graph["nodes"]][0] == "clamp" and graph["nodes"][0]["attrs"]["min"] == "-inf"
