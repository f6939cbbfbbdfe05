// Attention found in a decomposed graph and made one pair of ops (ir/attention.h) that one kernel runs
// (emit_attention.cpp): a product P @ V whose P is decompose's softmax along the last dim of scores S, where S is
// an elementwise function of a product Q @ Kt of S's shape (scale, masks, additive biases, softcaps: whatever the
// model wrote). Why: as products and a row kernel the scores [B.., L, S] go through memory three times (the product
// writes them, the softmax reads and writes them, the second product reads them), L * S floats a head where Q, K,
// V and the result are (L + S) * D; the fused kernel keeps each tile of scores on chip (FlashAttention).
// Fused only where no other reader sees the scores, the weights or anything between, and where the kernel
// holds the head dims on `target` (attention_fits).
#pragma once
#include "codegen/partition.h"
#include "ir/graph.h"

namespace kforge {

// Whether some schedule of the attention kernel holds head dims d (Q's and K's) and dv (V's) on `target`.
bool attention_fits(int64_t d, int64_t dv, const TargetFacts& target);
// `prim` (after decompose) with every attention it holds fused.
Graph fuse_attention(const Graph& prim, const TargetFacts& target);

}  // namespace kforge
