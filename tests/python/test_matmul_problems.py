"""The matrix-product problems (bench/level1_matmul, bench/level2) import on the CPU at their full sizes, without
allocating them (model and inputs on the meta device; shapes come from fake tensors), and lower to plans whose
products are cuBLASLt steps: the bridge, the C++ shape rules and the lowering agree on every one."""
import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from conftest import REPO
from kforge import fx_to_ir
from kforge.problem import load_problem

KFORGE = Path(os.environ.get("KFORGE_BIN", REPO / "build" / "kforge"))
PROBLEMS = sorted((REPO / "bench" / "level1_matmul").glob("*.py")) + sorted((REPO / "bench" / "level2").glob("*.py"))

# What each level-2 chain must lower to: the product's epilogue, and how many generated kernels remain.
LEVEL2 = {
    "01_linear_bias_relu": ("bias_relu", 0),
    "02_linear_gelu": ("bias", 1),  # nn.GELU() is the erf form; cuBLASLt's GELU epilogue is the tanh one
    "03_matmul_scale_residual": ("none", 1),
    "04_linear_bias_sigmoid": ("bias", 1),
}


def graph_of(path):
    problem = load_problem(path)
    with torch.device("meta"):
        model = problem.module.Model(*problem.module.get_init_inputs())
    return fx_to_ir.convert(model, problem.draw_inputs(0, "meta"), problem.path)


def lower_to_plan(graph, tmp_path):
    """`kforge lower` of the graph's JSON: the plan, as JSON."""
    g = tmp_path / "graph.json"
    g.write_text(json.dumps(graph))
    r = subprocess.run([str(KFORGE), "lower", str(g), "-o", str(tmp_path / "plan.json")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "plan.json").read_text())


def test_there_are_ten_level1_and_four_level2_problems():
    assert len(PROBLEMS) == 14


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_imports_and_lowers_to_cublaslt(path, tmp_path):
    graph = graph_of(path)
    assert [n["op"] for n in graph["nodes"]].count("matmul") == 1
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    plan = lower_to_plan(graph, tmp_path)
    library = [k for k in plan["kernels"] if k.get("kind") == "cublaslt"]
    assert len(library) == 1
    if path.parent.name == "level2":
        epilogue, kernels = LEVEL2[path.stem]
        assert library[0]["library"]["epilogue"] == epilogue
        assert len(plan["kernels"]) - 1 == kernels
    if "transposed" in path.stem or path.parent.name == "level2" and path.stem != "03_matmul_scale_residual":
        side = "a" if path.stem.endswith("transposed_a") else "b"
        assert library[0]["library"][side]["transposed"], "a transposing view is a flag, not a copy"
