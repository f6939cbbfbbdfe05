// Reshape sinking: an elementwise op on a reshape of a computed value runs before the reshape instead,
// op(reshape(z)) -> reshape(op(z)), so that it joins the kernel that computes z. Why: the partition stores the
// source of a reshape of a computed value (a view is a strided read of memory) and runs what follows it in a
// kernel of its own, one more pass over the tensor: GroupNorm's normalised values come out of its row kernel in
// the [N, G, C/G, *sp] view and are reshaped back to [N, C, *sp], where a tanh after the norm (23 of issue 3's
// suite) read them again. Elementwise ops do not care about the shape, so this is the same function for every
// input: unary ops, and binary ops whose other operand is one value (a scalar or a [1, ..] tensor no wider in
// rank than either shape; a constant the bridge wrote after the reshape, as it writes Python scalars just before
// their use, moves before it) or varies only along trailing dims the reshape keeps (a Linear's bias on a 3-D input,
// whose product is computed in 2-D and reshaped back: the bias then folds into the product's epilogue).
// Position-dependent ops (triangle) and gathers are left where they are. The reshape must have no other reader and
// be no graph output. Chains sink one op at a time, in graph order. Runs on
// primitive graphs, before the GEMM epilogue folding (an activation sunk next to its product folds into it).
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph sink_reshapes(const Graph& primitive_graph);

}  // namespace kforge
