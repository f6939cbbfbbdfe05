"""The convolution problems (bench/level1_conv) import on the CPU at their full sizes, without allocating them
(model and inputs on the meta device), and lower to plans whose convolutions are cuDNN steps with the geometry
PyTorch's own output shape implies: the bridge, the C++ shape rules and the lowering agree on every one."""
import os

import pytest

from conftest import REPO
from test_matmul_problems import graph_of, lower_to_plan

PROBLEMS = sorted((REPO / "bench" / "level1_conv").glob("*.py"))


def test_there_are_eight_problems():
    assert len(PROBLEMS) == 8


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_imports_and_lowers_to_cudnn(path, tmp_path):
    graph = graph_of(path)
    convs = [n for n in graph["nodes"] if n["op"] == "conv"]
    assert len(convs) == 1
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    plan = lower_to_plan(graph, tmp_path)
    library = [k for k in plan["kernels"] if k.get("kind") == "cudnn"]
    assert len(library) == 1
    lib = library[0]["library"]
    out = next(n for n in graph["nodes"] if n["name"] == graph["outputs"][0])
    assert [lib["n"], lib["o"], *lib["out"]] == list(out["shape"]), "cuDNN's geometry is PyTorch's output shape"
    has_bias = len(convs[0]["args"]) == 3
    assert len(plan["kernels"]) - 1 == int(has_bias), "the bias is one pointwise kernel after the cuDNN step"
