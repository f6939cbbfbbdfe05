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


class Sorted(torch.nn.Module):
    """A linear layer, a sort (no op of kforge's IR) and an activation after it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        y = torch.sort(y, dim=-1)[0]
        return torch.sigmoid(y) * 2.0, y


def test_a_graph_with_an_op_kforge_lacks_is_cut_into_the_pieces_it_has():
    """The backend's partitioning: the largest pieces of ops kforge has go to kforge, each importable on its own,
    the sort between them stays PyTorch's, and the whole computes what the model does."""
    from kforge.fx_to_ir import convert
    net = Sorted()
    gm = torch.fx.symbolic_trace(net)
    x = torch.randn(4, 16)
    pieces = []

    def compile_piece(piece, examples, name):
        pieces.append((name, [e.shape for e in examples]))
        graph = convert(piece, examples, f"{name}.py")  # ImportProblemError if kforge could not take it whole
        assert "opaque" not in [n["op"] for n in graph["nodes"]]
        return piece

    cut = api.partitioned(gm, [x], compile_piece)
    assert [shapes for _, shapes in pieces] == [[(4, 16)], [(4, 8)]], pieces
    assert [n.target for n in cut.graph.nodes if n.op == "call_function"].count(torch.sort) == 1
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"].count(torch.sort) == 1, "the model's own graph kept"
    for got, want in zip(cut(x), net(x)):
        torch.testing.assert_close(got, want)


def test_a_graph_of_ops_kforge_lacks_only_is_not_cut():
    gm = torch.fx.symbolic_trace(lambda x: torch.sort(x, dim=-1)[0])
    assert api.partitioned(gm, [torch.randn(3, 5)], lambda piece, examples, name: piece) is None


def test_the_backend_cuts_a_graph_kforge_cannot_take_whole(monkeypatch):
    """torch.compile's kforge backend hands each piece to kforge (here a stand-in for the GPU search) where the
    whole graph holds an op kforge lacks; PyTorch runs the rest."""
    def whole(model, examples, *args, name="model", **kwargs):
        raise api.Unsupported("torch.sort: not an op of kforge's IR")

    handed = []
    monkeypatch.setattr(api, "attempt", whole)
    monkeypatch.setattr(api, "optimize", lambda piece, examples, name, **settings: handed.append((name, settings)) or piece)
    net, x = Sorted(), torch.randn(4, 16)
    torch._dynamo.reset()
    got = torch.compile(net, backend="kforge", options={"budget": 3, "tier": "relaxed"})(x)
    assert len(handed) == 2, handed
    assert all(settings == {"budget": 3, "tier": "relaxed", "db": "kforge.db"} for _, settings in handed), handed
    for g, want in zip(got, net(x)):
        torch.testing.assert_close(g, want)


def test_the_backend_refuses_an_option_it_does_not_know():
    gm = torch.fx.symbolic_trace(lambda x: x.relu())
    with pytest.raises(ValueError, match="budgett"):
        api.backend(gm, [torch.randn(3)], options={"budgett": 4})


def test_the_installed_entry_point_registers_the_backend_once(monkeypatch):
    """An installed kforge declares the backend as a torch_dynamo_backends entry point: torch loads it by importing
    kforge.api, whose own registration must then stand aside (torch refuses a name registered twice)."""
    import importlib

    from torch._dynamo.backends import registry

    class EntryPoint:
        def load(self):
            importlib.reload(api)
            return api.backend
    monkeypatch.delitem(registry._COMPILER_FNS, "kforge")
    monkeypatch.setitem(registry._BACKENDS, "kforge", EntryPoint())
    assert registry.lookup_backend("kforge") is api.backend


class LinearNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm = torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32)

    def forward(self, x):
        return torch.relu(self.norm(self.fc(x)))


def captured(net, *inputs):
    """The graph and example inputs dynamo hands a backend for `net`."""
    seen = []
    torch._dynamo.reset()
    torch.compile(net, backend=lambda gm, examples: seen.append((gm, examples)) or gm.forward)(*inputs)
    return seen[0]


def test_the_modules_parameters_and_buffers_are_the_tasks_parameters_not_inputs():
    """Dynamo passes a module's parameters and buffers as graph inputs; kforge's hidden sets would draw them like
    data (unit normal weights, negative running variances). The backend holds them as the graph's own attributes,
    the very tensors of the module, and feeds the plan the data inputs alone."""
    from kforge.bridge import imported_task

    net, x = LinearNorm(), torch.randn(8, 16)
    gm, examples = captured(net, x)
    stateful, kept = api.with_state_as_attributes(gm, examples)
    assert [examples[i] for i in kept] == [examples[i] for i, t in enumerate(examples) if t is x] and len(kept) == 1
    held = dict(stateful.named_parameters())
    assert {id(t) for t in held.values()} == {id(p) for p in net.parameters()}
    assert {id(t) for t in stateful.buffers()} >= {id(net.norm.running_mean), id(net.norm.running_var)}
    torch.testing.assert_close(stateful(x)[0], gm(*examples)[0])
    graph = imported_task(api.problem_of(stateful, [x], "graph"), "cpu").graph
    assert len(graph["inputs"]) == 1 and len(graph["params"]) >= 4, (graph["inputs"], graph["params"])
