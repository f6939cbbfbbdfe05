"""kforge on a model object (kforge.api): the model as an in-memory task, `kforge.optimize` and torch.compile's
`kforge` backend. Without a GPU both give the model back to PyTorch with a warning saying why; with one (the GPU
machine's test run) they return kforge's plan, which must compute what the model does."""
import warnings

import pytest
import torch

import kforge
from kforge import api
from kforge.bridge import imported_task


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(64)
        self.fc = torch.nn.Linear(64, 32)

    def forward(self, x):
        return torch.relu(self.fc(self.norm(x)))


def test_a_model_object_is_a_task_with_its_own_weights():
    net = Net()
    problem = api.problem_of(net, [torch.randn(8, 64)])
    task = imported_task(problem, "cpu", keep_whole=False)
    assert [p["name"] for p in task.graph["params"]] == ["norm.weight", "norm.bias", "fc.weight", "fc.bias"]
    assert torch.equal(task.params[2], net.fc.weight.detach()), "the model's weights, not a fresh init"
    (x,) = problem.draw_inputs(3, "cpu")
    assert x.shape == (8, 64) and not torch.equal(x, problem.draw_inputs(4, "cpu")[0]), "fresh draws"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path: no GPU, no plan")
def test_without_a_gpu_the_model_runs_in_pytorch_and_says_why():
    net = Net()
    with pytest.warns(UserWarning, match="needs a CUDA GPU"):
        assert kforge.optimize(net, [torch.randn(8, 64)]) is net
    x = torch.randn(8, 64)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch._dynamo.reset()
        out = torch.compile(net, backend="kforge")(x)
    assert torch.allclose(out, net(x)) and any("needs a CUDA GPU" in str(w.message) for w in seen)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_optimize_returns_a_plan_that_computes_what_the_model_does(tmp_path):
    net = Net().cuda()
    fast = kforge.optimize(net, [torch.randn(8, 64, device="cuda")], budget=4, db=str(tmp_path / "k.db"))
    assert isinstance(fast, api.KforgeModule)
    x = torch.randn(8, 64, device="cuda")
    with torch.no_grad():
        assert torch.allclose(fast(x), net(x), atol=1e-4, rtol=1e-4)
    torch._dynamo.reset()
    compiled = torch.compile(net, backend="kforge")
    with torch.no_grad():
        assert torch.allclose(compiled(x), net(x), atol=1e-4, rtol=1e-4)
