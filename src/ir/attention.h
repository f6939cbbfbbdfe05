// Attention as two ops, so that the generator can run softmax(q k^T ...) v in one kernel without storing the
// scores (codegen/attention_fusion.h makes them from products and a softmax; codegen/emit_attention.cpp runs them).
//
//   attention_scores [q, kt]  q [B.., L, D], kt [B.., D, S] -> [B.., L, S]: the canonical product q @ kt (ir/matmul.h:
//                             equal ranks, each operand's batch dims the result's or all 1). A value only the kernel
//                             of the attention reading it holds: the partition never stores it.
//   attention [s, v]          s [B.., L, S], v [B.., S, Dv] -> [B.., L, Dv]: softmax(s) along the last dim, times v
//                             (the canonical product). s is an elementwise function of one attention_scores node
//                             (scale, masks, biases: whatever the model wrote between its product and its softmax).
//
// A row of s that is -inf everywhere gives NaN, as PyTorch's softmax does (0 / 0).
#pragma once
#include <vector>

#include "ir/graph.h"
#include "ir/matmul.h"

namespace kforge {

bool is_attention_op(const std::string& op);  // attention_scores or attention

// One attention's geometry: heads (the result's batch dims, flattened), query rows L, keys S, Q's and K's head
// dim D, V's Dv.
struct AttentionDims {
  int64_t heads = 1, rows = 1, keys = 1, head = 1, value_head = 1;
};
// The geometry of attention node `n` (its scores' product found through scores_product_of).
AttentionDims attention_geometry(const Graph& g, const Node& n);
// The attention_scores node that attention node `n`'s scores are an elementwise function of (UserError where
// there is none).
int scores_product_of(const Graph& g, const Node& n);

// The product's geometry of either op (its two arguments' shapes), checked: UserError naming the node.
MatmulDims attention_dims(const Graph& g, const Node& n);

}  // namespace kforge
