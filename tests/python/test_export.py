"""The exported drop-in ModelNew: Model's constructor and state_dict, the plan and the problem carried inside,
importable without kforge._core (forward itself needs it and a GPU)."""
import importlib.util
import inspect
import json
import shutil

import pytest
import torch

from kforge import bridge, export
from kforge.problem import load_problem
from op_cases import Case

PLAN = {"version": 1, "kernels": []}
PROBLEM = Case("bn_ln", "self.ln(self.bn(x) * self.w)", [], inputs="torch.randn(4, 8)",
               init="self.bn = nn.BatchNorm1d(8)\nself.ln = nn.LayerNorm(8)\nself.w = nn.Parameter(torch.randn(8))")


def load_module(path):
    spec = importlib.util.spec_from_file_location(f"exported_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def exported(tmp_path):
    source = tmp_path / "problem.py"
    source.write_text(PROBLEM.source().replace("def __init__(self):", "def __init__(self, eps=1e-5):"))
    bundle, plan, out = tmp_path / "bundle", tmp_path / "plan.json", tmp_path / "model_new.py"
    assert bridge.main(["import", str(source), "-o", str(bundle), "--device", "cpu", "--no-baselines"]) == 0
    plan.write_text(json.dumps(PLAN))
    assert export.main([str(bundle), str(plan), "-o", str(out)]) == 0
    return source, out


def test_same_constructor_and_state_dict(exported):
    source, out = exported
    Model = load_problem(source).module.Model
    ModelNew = load_module(out).ModelNew
    assert inspect.signature(ModelNew.__init__) == inspect.signature(Model.__init__)
    torch.manual_seed(42)
    new = ModelNew()
    torch.manual_seed(42)
    reference = Model()
    assert new.state_dict().keys() == reference.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(new.state_dict().values(), reference.state_dict().values()))
    new.load_state_dict(reference.state_dict())


def test_carries_plan_params_and_problem(exported, tmp_path):
    source, out = exported
    module = load_module(out)
    assert json.loads(module._PLAN_JSON) == PLAN
    assert [p["name"] for p in module._SIGNATURE["params"]] == ["bn.weight", "bn.bias", "w", "ln.weight", "ln.bias"]
    assert module._TRAIN_MODE_MODULES == ["bn"]
    # Copied elsewhere with the problem file gone, it still loads.
    away = tmp_path / "away"
    away.mkdir()
    shutil.copy(out, away / "model_new.py")
    source.unlink()
    assert "ln.weight" in load_module(away / "model_new.py").ModelNew().state_dict()


def test_forward_calls_no_torch_op(exported):
    forward = inspect.getsource(load_module(exported[1]).ModelNew.forward)
    assert "torch." not in forward


def test_broken_plan_is_refused(tmp_path, exported):
    bundle, plan = tmp_path / "bundle", tmp_path / "plan.json"
    plan.write_text("{not json")
    with pytest.raises(json.JSONDecodeError):
        export.main([str(bundle), str(plan), "-o", str(tmp_path / "x.py")])
