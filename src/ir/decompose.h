// Decomposition: rewrites high-level ops (softmax, layer_norm, losses, ...) into primitives
// (elementwise, reduce with keepdim, scan, pool, gather, views). After it, the interpreter and the code
// generator see a dozen op kinds instead of fifty, and fusion decisions are made on primitives alone.
// Every rule is valid for all inputs; the CPU tests check each against PyTorch.
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph decompose(const Graph& high_level);

}  // namespace kforge
