// Shape rules: the output type of every op from its arguments' types and its attributes. A rule that
// fails throws a UserError naming the node, the op and what does not fit; graph_from_json runs them on
// import and decompose.cpp on every node it creates, so a graph that exists is well typed.
#pragma once
#include "ir/graph.h"

namespace kforge {

TensorType infer_type(const Graph& g, const Node& n);

// Shape of a reduction of `in` over `dims` (sorted, unique; empty = all dims).
Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims, bool keepdim);

}  // namespace kforge
