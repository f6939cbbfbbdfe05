// GEMM epilogue folding: a bias add and a ReLU or tanh-GELU that follow a matrix product become part of
// the matmul node (attrs.epilogue, bias as a third argument), so that cuBLASLt applies them while the tile
// is still in registers instead of a second kernel reading the product back from memory.
//
// Folded only when it computes the same function: the product has no other reader and is no graph output,
// the bias holds one value per result column (Linear's bias), and the activation is one cuBLASLt has
// (its GELU is the tanh approximation, so an erf GELU stays a kernel of its own). Runs on primitive graphs.
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph fold_gemm_epilogues(const Graph& primitive_graph);

}  // namespace kforge
