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
from kforge.problem import dropout_off, load_problem

KFORGE = Path(os.environ.get("KFORGE_BIN", REPO / "build" / "kforge"))
LEVEL2_PRODUCTS = [p for p in sorted((REPO / "bench" / "level2").glob("*.py")) if "conv" not in p.stem]
PROBLEMS = sorted((REPO / "bench" / "level1_matmul").glob("*.py")) + LEVEL2_PRODUCTS

# What each level-2 chain must lower to: the product's epilogue (what cuBLASLt fuses), and how many generated
# kernels the rest of the chain takes (a row statistic and its use share one kernel where the rows fit).
LEVEL2 = {
    "01_linear_bias_relu": ("bias_relu", 0),
    "02_linear_gelu": ("bias", 1),  # nn.GELU() is the erf form; cuBLASLt's GELU epilogue is the tanh one
    "03_matmul_scale_residual": ("none", 1),
    "04_linear_bias_sigmoid": ("bias", 1),
    "05_linear_swish_scale": ("bias", 1),
    "06_linear_layernorm_relu": ("bias", 1),
    "07_linear_softmax": ("bias", 1),
    "08_linear_logsumexp_relu": ("bias", 1),
    "09_linear_batchnorm_gelu": ("bias", 1),
    "10_linear_groupnorm_hardtanh": ("bias", 1),  # the hardtanh sinks below the groups' reshape into their kernel
    "11_linear_clamp_sum": ("bias", 1),
    "12_linear_max_gelu": ("bias", 1),
    "13_bmm_softmax_scale": ("none", 1),
    "14_linear_mish_mish": ("bias", 1),
    "15_linear_sigmoid_scale_residual": ("bias", 1),
    "16_linear_min_subtract": ("bias", 1),
    "17_linear_hardswish_rmsnorm": ("bias", 1),
    "18_matmul_divide_sum_scale": ("none", 1),
    "19_linear_tanh_scale_bias": ("bias", 1),
    "20_linear_leakyrelu_logsoftmax": ("bias", 1),
}


def graph_of(path):
    problem = load_problem(path)
    with torch.device("meta"):
        model = dropout_off(problem.module.Model(*problem.module.get_init_inputs()))  # as build_model makes it
    return fx_to_ir.convert(model, problem.draw_inputs(0, "meta"), problem.path)


def lower_to_plan(graph, tmp_path):
    """`kforge lower` of the graph's JSON: the plan, as JSON."""
    g = tmp_path / "graph.json"
    g.write_text(json.dumps(graph))
    r = subprocess.run([str(KFORGE), "lower", str(g), "-o", str(tmp_path / "plan.json")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "plan.json").read_text())


def library_plan(path, ops, tmp_path):
    """The problem's graph, which must hold exactly one node of `ops`, and its plan from `kforge lower` (the test
    is skipped under KFORGE_NO_CORE=1)."""
    graph = graph_of(path)
    assert sum(n["op"] in ops for n in graph["nodes"]) == 1
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    return graph, lower_to_plan(graph, tmp_path)


# A matrix times a scalar, and a diagonal matrix times a matrix, are no products: one elementwise kernel each
# (the diagonal a broadcast of its vector), tested on their own below. A matrix times a vector is a row reduction
# (each output a dot product of one row: memory-bound, where a row kernel streams the matrix faster than GEMV).
SCALAR = REPO / "bench" / "level1_matmul" / "13_matrix_scalar.py"
DIAGONAL = REPO / "bench" / "level1_matmul" / "16_diag_times_matrix.py"
ELEMENTWISE = (SCALAR, DIAGONAL)
MATRIX_VECTOR = REPO / "bench" / "level1_matmul" / "04_matrix_vector.py"


def test_there_are_eighteen_level1_and_twenty_level2_product_problems():
    assert len(PROBLEMS) == 38 and sorted(p.stem for p in LEVEL2_PRODUCTS) == sorted(LEVEL2)


@pytest.mark.parametrize("path", ELEMENTWISE, ids=lambda p: p.stem)
def test_a_scalar_or_diagonal_factor_is_one_elementwise_kernel(path, tmp_path):
    graph = graph_of(path)
    ops = [n["op"] for n in graph["nodes"] if n["op"] not in ("input", "const", "reshape")]
    assert ops == ["mul"], ops
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    plan = lower_to_plan(graph, tmp_path)
    assert len(plan["kernels"]) == 1 and plan["kernels"][0].get("kind", "nvrtc") == "nvrtc"


def test_a_matrix_times_a_vector_is_one_row_kernel(tmp_path):
    graph, plan = library_plan(MATRIX_VECTOR, ("matmul",), tmp_path)
    assert len(plan["kernels"]) == 1 and plan["kernels"][0].get("kind", "nvrtc") == "nvrtc"


@pytest.mark.parametrize("path", [p for p in PROBLEMS if p not in ELEMENTWISE + (MATRIX_VECTOR,)],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_imports_and_lowers_to_cublaslt(path, tmp_path):
    graph, plan = library_plan(path, ("matmul",), tmp_path)
    library = [k for k in plan["kernels"] if k.get("kind") == "cublaslt"]
    triangular = path.stem.endswith("_triangular")
    assert len(library) == (8 if triangular else 1)
    if path.parent.name == "level2":
        epilogue, kernels = LEVEL2[path.stem]
        assert library[0]["library"]["epilogue"] == epilogue
        assert len(plan["kernels"]) - 1 == kernels
    if triangular:  # row blocks of the columns reaching the triangle, then the mask: one generated kernel
        assert [n["op"] for n in graph["nodes"]][-1] == "triangle" and len(plan["kernels"]) == 9
        n = library[0]["library"]["m"] * 8  # about: the blocks' rows
        work = sum(k["library"]["m"] * k["library"]["n"] for k in library)
        assert work < 0.6 * n * n, "about half the product"
        offsets = [k["library"]["c"].get("offset", 0) for k in library]
        assert offsets[0] == 0 and offsets == sorted(offsets), "row blocks in order, from the first row"
    if "transposed" in path.stem or path.parent.name == "level2" and "linear" in path.stem:
        sides = {"transposed_a": "a", "transposed_both": "ab"}.get(path.stem[3:], "b")
        for side in sides:
            assert library[0]["library"][side]["transposed"], "a transposing view is a flag, not a copy"
