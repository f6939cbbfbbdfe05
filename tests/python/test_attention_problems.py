"""The attention problems of bench/attention (F.scaled_dot_product_attention causal and not, cross-attention,
attention written out with a mask buffer, an additive bias) and the level-3 networks with attention import on the
CPU at their full sizes without allocating them (the meta device) and lower to plans in which each attention is one
kernel: no product of the scores with V and no softmax over the keys is left (codegen/attention_fusion.h)."""
import os

import pytest
import torch

from conftest import REPO
from kforge import fx_to_ir
from kforge.problem import load_problem
from test_matmul_problems import graph_of, lower_to_plan

PROBLEMS = sorted((REPO / "bench" / "attention").glob("*.py"))
# Networks with attention, and their attention layers (the other products stay cuBLASLt steps): 07 written out
# with a mask buffer, 08 nn.MultiheadAttention, 13 windows with a relative bias, 20 scaled_dot_product_attention.
NETWORKS = {"07_mingpt_block": 1, "08_vit_encoder": 2, "13_window_attention": 2, "20_gpt2_blocks": 2}


def attention_kernels(plan):
    return [k for k in plan["kernels"] if "attention group" in k.get("source", "")]


def test_there_are_eight_attention_problems():
    assert len(PROBLEMS) == 8


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_problems_lower_to_one_attention_kernel(path, tmp_path):
    graph = graph_of(path)
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    plan = lower_to_plan(graph, tmp_path)
    assert len(attention_kernels(plan)) == 1
    assert not [k for k in plan["kernels"] if k.get("kind") == "cublaslt"], "a product left beside the fused kernel"
    causal = "causal" in path.stem and "written_out" not in path.stem  # a mask buffer's values are data
    assert ("skipped" in attention_kernels(plan)[0]["source"]) == causal


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_networks_fuse_their_attention(name, tmp_path):
    graph = graph_of(REPO / "bench" / "level3" / f"{name}.py")
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    assert len(attention_kernels(lower_to_plan(graph, tmp_path))) == NETWORKS[name]


@pytest.mark.parametrize("path", [p for p in PROBLEMS if p.stem.startswith(("01_", "07_"))], ids=lambda p: p.stem)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_half_precision_attention_runs_on_tensor_cores_in_its_dtype(path, dtype, tmp_path):
    """As KernelBench's --precision casts a problem: q, k, v and the model in 16 bits. The attention's one kernel
    takes the 16-bit values as stored on the tensor cores in that dtype (its default schedule)."""
    problem = load_problem(path)
    with torch.device("meta"):
        model = problem.module.Model().to(dtype)
    graph = fx_to_ir.convert(model, [x.to(dtype) for x in problem.draw_inputs(0, "meta")], problem.path)
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    [kernel] = attention_kernels(lower_to_plan(graph, tmp_path))
    assert kernel["schedule"]["strategy"] == "mma"
    assert kernel["schedule"]["precision"] == ("fp16" if dtype == torch.float16 else "bf16")
