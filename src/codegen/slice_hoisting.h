// Slices taken of an elementwise value's operands instead: slice(a op b) becomes slice(a) op slice(b) where every
// reader of a op b is a slice and its operands are in memory by their nature (inputs, params, library results,
// reductions, scans, pools, views and casts of them). Why: the partition stores a computed value a view reads
// (partition.cpp), so slicing a sum costs a kernel and a round trip of the sum through memory; an unrolled LSTM
// step adds the input projection's row of the step to the recurrent product and slices the sum into its four gates,
// one kernel of every step's three for that alone (GRU and RNN steps the same). Slices of values in memory are
// strided reads, so the gates' kernel computes the sum where it reads it. Operands broadcast along the sliced dim
// (size 1 there, or no such dim) are read as they are. The same arithmetic on the same values: the graph computes
// the same function, bit for bit. Runs on primitive graphs after the epilogue folds (a product's bias add is its
// epilogue by then, so the product is in memory).
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph slices_before_elementwise(const Graph& primitive_graph);

}  // namespace kforge
