// GEMM epilogue folding: a bias add and a ReLU or tanh-GELU that follow a matrix product become part of
// the matmul node (attrs.epilogue, bias as a third argument), so that cuBLASLt applies them while the tile
// is still in registers instead of a second kernel reading the product back from memory.
//
// Folded only when it computes the same function: the product has no other reader and is no graph output,
// the bias holds one value per result column (Linear's bias), and the activation is one cuBLASLt has
// (its GELU is the tanh approximation, so an erf GELU stays a kernel of its own). Runs on primitive graphs.
// A product whose only reader is torch.triu / tril (op triangle) is marked (attrs.triangle: upper, diagonal):
// its library steps compute only the row blocks' columns that reach the triangle (issue 3: a triangular
// product computes its triangle, about half the work, not the full product and a mask).
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph fold_gemm_epilogues(const Graph& primitive_graph);

}  // namespace kforge
