// Convolution epilogue folding: where a convolution's bias add is the graph's result, or what a pooling or a view
// (a GroupNorm's regrouping) reads, the add goes back into the convolution node (bias as a third argument, one
// value per output channel), so that the step writing the result adds it (the channels-last transpose back,
// kforge's direct kernel, an in-place pass after an NCHW library call, or cuDNN's own graph: schedule
// library_epilogue) instead of a kernel of its own reading the result back from memory: one pass over the
// convolution's result (0.3 ms of 537 MB on the H200: 23_conv2d_groupnorm_tanh and 26_conv2d_avgpool_sigmoid_sum
// each had such a kernel).
//
// An activation cuDNN's pointwise operations have (conv_activation_mode) that reads the convolution (or its bias
// add) alone, and whose own result is read where a kernel would not apply it for nothing (the same rule), folds in
// too: attrs.activation holds the activation node's op and attrs ({"op": "relu", "attrs": {}}), applied after the
// bias (conv -> bias -> ReLU -> max pool: the ReLU rides where the bias does).
//
// Not where only elementwise ops and reductions read the sum: their kernels read the result anyway and add the
// bias for nothing (an NCHW step would add an in-place pass). The same fp32 arithmetic either way. Runs on
// primitive graphs (decompose split the bias off).
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph fold_conv_epilogues(const Graph& primitive_graph);

// Whether `activation` (a unary op node, f32) is one a convolution's epilogue takes: relu, sigmoid, tanh, gelu (erf or
// tanh form), silu, elu, leaky_relu, hardtanh; each has a cuDNN pointwise mode (runtime/cudnn_conv.cpp).
bool is_conv_activation(const Node& activation);

}  // namespace kforge
