"""The convolution chains of bench/level2_conv (1-D/2-D/3-D, transposed, depthwise, grouped convolutions followed
by normalisations, activations, pooling, scaling, residual adds and reductions) and the large single operators of
bench/level1_large import on the CPU at their full sizes without allocating them (the meta device), and lower to
plans: a chain's convolutions are cuDNN steps (or kforge's direct depthwise kernel's group) and the rest generated
kernels, none of them kept whole."""
import os

import pytest

from conftest import REPO
from test_matmul_problems import graph_of, lower_to_plan

CHAINS = sorted((REPO / "bench" / "level2_conv").glob("*.py"))
LARGE = sorted((REPO / "bench" / "level1_large").glob("*.py"))
CONVS = ("conv", "conv_transpose")


def test_there_are_thirty_two_chains_and_four_large_operators():
    assert len(CHAINS) == 32 and len(LARGE) == 4


@pytest.mark.parametrize("path", CHAINS, ids=lambda p: p.stem)
def test_chains_import_and_lower_with_their_convolutions_in_cudnn(path, tmp_path):
    graph = graph_of(path)
    ops = [n["op"] for n in graph["nodes"]]
    assert "opaque" not in ops
    convs = sum(op in CONVS for op in ops)
    assert convs == (2 if "separable" in path.stem else 1)
    assert any(op not in CONVS + ("input", "param", "const", "reshape") for op in ops), "a chain after the convolution"
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    plan = lower_to_plan(graph, tmp_path)
    kinds = [k.get("kind", "nvrtc") for k in plan["kernels"]]
    assert kinds.count("cudnn") == convs and "nvrtc" in kinds


@pytest.mark.parametrize("path", LARGE, ids=lambda p: p.stem)
def test_large_operators_import_and_lower(path, tmp_path):
    graph = graph_of(path)
    assert [x["shape"] for x in graph["inputs"]] == [[4096, 393216]]
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    plan = lower_to_plan(graph, tmp_path)
    assert plan["kernels"] and all(k.get("kind", "nvrtc") == "nvrtc" for k in plan["kernels"])
