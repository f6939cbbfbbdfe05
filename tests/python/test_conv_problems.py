"""The convolution problems (bench/level1_conv) import on the CPU at their full sizes, without allocating them
(model and inputs on the meta device), and lower to plans whose convolutions are cuDNN steps with the geometry
PyTorch's own output shape implies: the bridge, the C++ shape rules and the lowering agree on every one."""

import pytest

from conftest import REPO
from test_matmul_problems import library_plan

PROBLEMS = sorted((REPO / "bench" / "level1_conv").glob("*.py"))
LEVEL2_CONVS = [p for p in sorted((REPO / "bench" / "level2").glob("*.py")) if "conv" in p.stem]

# The level-2 chains after a convolution: how many generated kernels the chain (the conv's bias included) takes.
# Statistics over a whole image group or channel are split reductions (a partial kernel, a finishing one) and
# then the normalisation's pointwise kernel; row statistics that fit one block fuse with their use.
LEVEL2 = {
    "21_conv2d_relu_bias_add": 1,
    "22_conv2d_batchnorm_relu": 1,
    "23_conv2d_groupnorm_tanh": 2,  # the tanh sinks below the groups' reshape into the normalising kernel
    "24_conv2d_instancenorm_divide": 1,
    "25_conv2d_maxpool_hardswish": 2,
    "26_conv2d_avgpool_sigmoid_sum": 3,
    "27_conv2d_global_average_bias": 2,
    "28_conv2d_min_tanh_tanh": 1,
    "29_conv3d_softmax_maxpool": 2,
    "30_conv3d_groupnorm_mean": 4,
    "31_conv1d_gelu_layernorm": 1,
    "32_conv2d_mish_scale_clamp": 1,
    "33_conv2d_leakyrelu_channel_sum": 2,
    "35_conv2d_relu_maxpool": 2,  # bias and ReLU fold into the convolution: its in-place pass, then the pooling
    "36_conv_transpose2d_gelu": 1,  # bias and GELU fold: one in-place pass after the call
    "34_conv2d_hardtanh_logsumexp": 1,
}


def test_there_are_twelve_level1_and_sixteen_level2_problems():
    assert len(PROBLEMS) == 12 and sorted(p.stem for p in LEVEL2_CONVS) == sorted(LEVEL2)


@pytest.mark.parametrize("path", LEVEL2_CONVS, ids=lambda p: p.stem)
def test_level2_chains_lower_to_one_cudnn_step_and_fused_kernels(path, tmp_path):
    graph, plan = library_plan(path, ("conv", "conv_transpose"), tmp_path)
    kinds = [k.get("kind", "nvrtc") for k in plan["kernels"]]
    assert kinds[0] == "cudnn" and kinds.count("cudnn") == 1
    assert len(kinds) - 1 == LEVEL2[path.stem]


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_imports_and_lowers_to_cudnn(path, tmp_path):
    graph, plan = library_plan(path, ("conv", "conv_transpose"), tmp_path)
    convs = [n for n in graph["nodes"] if n["op"] in ("conv", "conv_transpose")]
    transposed = convs[0]["op"] == "conv_transpose"
    assert transposed == ("transpose" in path.stem)
    library = [k for k in plan["kernels"] if k.get("kind") == "cudnn"]
    assert len(library) == 1
    lib = library[0]["library"]
    out = next(n for n in graph["nodes"] if n["name"] == graph["outputs"][0])
    assert lib["op"] == convs[0]["op"]
    # A transposed convolution is described by the forward one it is the input gradient of: its input is the result.
    result = [lib["n"], lib["c"], *lib["in"]] if transposed else [lib["n"], lib["o"], *lib["out"]]
    assert result == list(out["shape"]), "cuDNN's geometry is PyTorch's output shape"
    has_bias = len(convs[0]["args"]) == 3
    assert len(plan["kernels"]) - 1 == int(has_bias), "the bias is one pointwise kernel after the cuDNN step"
