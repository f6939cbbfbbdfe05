"""The IR the bridge writes for every op of docs/interfaces.md: op sequence, attributes, params, shapes."""
import json
import os
import subprocess
import sys

import pytest
import torch

from kforge.bundle import output_specs, read_task
from kforge.dtypes import IR_TO_TORCH
from kforge.problem import load_problem
from op_cases import CASES, Case
from conftest import REPO

DIM_ATTRS = ("dim", "dims")


def check_structure(graph: dict) -> None:
    """The contract's rules: unique names, args name earlier values, known dtypes, normalised dims."""
    seen = set()
    for value in graph["inputs"] + graph["params"]:
        assert value["name"] not in seen, value
        assert value["dtype"] in IR_TO_TORCH
        seen.add(value["name"])
    for node in graph["nodes"]:
        assert node["name"] not in seen, node
        assert all(a == "" or a in seen for a in node["args"]), node
        assert node["dtype"] in IR_TO_TORCH
        for key in DIM_ATTRS:
            dims = node["attrs"].get(key, [])
            assert all(d >= 0 for d in ([dims] if isinstance(dims, int) else dims)), node
        seen.add(node["name"])
    assert graph["outputs"] and all(name in seen for name in graph["outputs"])
    json.dumps(graph, allow_nan=False)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_case(case: Case, imported):
    task = read_task(imported(case))
    graph = task["graph"]
    check_structure(graph)
    assert [n["op"] for n in graph["nodes"]] == case.ops
    for op, attrs in case.attrs.items():
        node = next(n for n in graph["nodes"] if n["op"] == op)
        assert {k: node["attrs"].get(k) for k in attrs} == attrs, node
    assert [p["name"] for p in graph["params"]] == case.params

    problem = load_problem(task["source"])
    inputs = problem.draw_inputs(0, "cpu")
    assert [(i["dtype"], i["shape"]) for i in graph["inputs"]] == [
        ({torch.float32: "f32", torch.int64: "i64"}[t.dtype], list(t.shape)) for t in inputs]
    with torch.no_grad():
        outputs = problem.build_model()(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    assert [(IR_TO_TORCH[s["dtype"]], s["shape"]) for s in output_specs(graph)] == [
        (t.dtype, list(t.shape)) for t in outputs]


CONTRACT_OPS = """relu sigmoid tanh exp log abs neg sqrt rsqrt erf sin cos reciprocal sign silu softsign selu
floor ceil round trunc log1p expm1 tan atan asin acos sinh cosh
hardsigmoid hardswish mish gelu leaky_relu elu hardtanh softplus clamp pow_scalar cast add sub mul div maximum minimum
pow fmod atan2 gt lt ge le eq ne where triangle sum mean amax amin prod argmax argmin vector_norm var softmax log_softmax layer_norm
rms_norm batch_norm group_norm instance_norm cumsum cumprod cummax cummin logcumsumexp flip max_pool avg_pool mse_loss huber_loss
smooth_l1_loss kl_div cross_entropy triplet_margin_loss cosine_similarity matmul conv conv_transpose reshape permute expand
contiguous cat slice gather pad
const""".split()


def test_every_contract_op_is_covered():
    contract = (REPO / "docs" / "interfaces.md").read_text()
    covered = {op for case in CASES for op in case.ops}
    for op in CONTRACT_OPS:
        assert f"`{op}" in contract or f'"{op}"' in contract, f"{op} is not in docs/interfaces.md"
        assert op in covered, f"no case emits {op}"
    assert covered <= set(CONTRACT_OPS), covered - set(CONTRACT_OPS)


def test_alias_output_names_the_input(imported):
    graph = read_task(imported(next(c for c in CASES if c.name == "identity_module")))["graph"]
    assert graph["nodes"] == [] and graph["outputs"] == ["x"]


def test_batchnorm_running_stats_are_not_params(imported):
    graph = read_task(imported(next(c for c in CASES if c.name == "batch_norm_2d")))["graph"]
    assert "bn.running_mean" not in {p["name"] for p in graph["params"]}


def test_node_shapes_are_pytorchs(imported):
    graph = read_task(imported(next(c for c in CASES if c.name == "normalize")))["graph"]
    assert [(n["op"], n["shape"]) for n in graph["nodes"]] == [
        ("vector_norm", [4, 1]), ("clamp", [4, 1]), ("div", [4, 8])]


def test_command_line_prints_ir(write_problem):
    path = write_problem(Case("cli", "torch.softmax(x, dim=1)", ["softmax"]).source())
    result = subprocess.run([sys.executable, "-m", "kforge.fx_to_ir", str(path)], capture_output=True, text=True,
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    assert result.returncode == 0, result.stderr
    assert [n["op"] for n in json.loads(result.stdout)["nodes"]] == ["softmax"]
