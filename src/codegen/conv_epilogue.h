// Convolution bias folding: where a convolution's bias add is the graph's result, or what a pooling or a view
// (a GroupNorm's regrouping) reads, the add goes back into the convolution node (bias as a third argument, one
// value per output channel), so that the step writing the result adds it (the channels-last transpose back,
// kforge's direct kernel, or an in-place pass after an NCHW library call) instead of a kernel of its own reading
// the result back from memory: one pass over the convolution's result (0.3 ms of 537 MB on the H200: run 11.3's
// 23_conv2d_groupnorm_tanh and 26_conv2d_avgpool_sigmoid_sum each had such a kernel).
//
// Not where only elementwise ops and reductions read the sum: their kernels read the result anyway and add the
// bias for nothing (an NCHW step would add an in-place pass). The same fp32 addition either way. Runs on
// primitive graphs (decompose split the bias off).
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph fold_conv_bias(const Graph& primitive_graph);

}  // namespace kforge
