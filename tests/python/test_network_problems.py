"""The whole networks of bench/level3 (ResNet-18 and -50, VGG, MobileNetV2 and V3, DenseNet, SqueezeNet, Inception,
minGPT, GPT-2, ViT with einops, U-Net, MLP-Mixer, ConvNeXt, EfficientNet, ShuffleNet, Swin-style windows, a
hand-written RNN loop and LSTM-cell decoder, Elman RNN, LSTM and GRU layers, a gated linear recurrence, BERT and transformer-decoder layers with cross-attention,
VGG with BatchNorm, SE-ResNet, MobileNetV1, a two-layer bidirectional LSTM tagger, a ViT classifier with a class
token, a Perceiver's latent cross-attention, a GRU seq2seq with attention, a Mamba-style block, ResNeXt, Inception-v3,
LeNet, a TCN, a residual MLP, PyTorch's own transformer encoder with masks, a reflect-padded generator) import on the CPU
at their full sizes without allocating them (the meta device), with nothing kept whole, and lower to one plan
each: convolutions as cuDNN steps, products as cuBLASLt steps, the rest generated kernels."""
import os

import pytest

from conftest import REPO
from test_matmul_problems import graph_of, lower_to_plan

NETWORKS = sorted((REPO / "bench" / "level3").glob("*.py"))


def test_there_are_forty_two_networks():
    assert len(NETWORKS) == 42


@pytest.mark.parametrize("path", NETWORKS, ids=lambda p: p.stem)
def test_networks_import_whole_and_lower_to_one_plan(path, tmp_path):
    graph = graph_of(path)
    ops = [n["op"] for n in graph["nodes"]]
    assert "opaque" not in ops and len(ops) > 15, ops
    if os.environ.get("KFORGE_NO_CORE") == "1":
        pytest.skip("KFORGE_NO_CORE=1: the kforge binary is deliberately not used")
    plan = lower_to_plan(graph, tmp_path)
    kinds = [k.get("kind", "nvrtc") for k in plan["kernels"]]
    assert kinds.count("cudnn") == sum(op in ("conv", "conv_transpose") for op in ops)
    assert "nvrtc" in kinds
