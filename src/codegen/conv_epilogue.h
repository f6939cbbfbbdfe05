// Convolution bias folding: where a convolution's bias add is the graph's result (nothing reads it), the add
// goes back into the convolution node (bias as a third argument, one value per output channel), so that the
// step writing the result adds it (the channels-last transpose back, kforge's direct kernel, or an in-place
// pass after an NCHW library call) instead of a kernel of its own reading the result back from memory.
//
// Only there: a bias add that a chain of elementwise ops reads is left to the chain's kernel, which reads the
// result anyway and adds the bias for nothing. Runs on primitive graphs (decompose split the bias off).
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph fold_conv_bias(const Graph& primitive_graph);

}  // namespace kforge
