// Views of a half-precision task's stored tensors (ir/types.h) are taken before their cast to f32: view(cast(x))
// becomes cast(view(x)) where x is an f16 / bf16 input or param, or a view of one. A view of a stored value is a
// strided read, so the cast is then computed where the value is read; a view of a computed value (the cast) needs
// that value stored first (partition.cpp), a kernel and a pass over memory for nothing: BatchNorm's per-channel
// weight reshaped for broadcasting, GroupNorm's input reshaped into its groups.
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph views_before_half_casts(const Graph& prim);

}  // namespace kforge
