// Matrix products: torch.matmul's shape semantics, and the epilogues a GEMM library applies for free.
//
// One op, `matmul [a, b]`, at both levels. High level: exactly torch.matmul (1-D operands, batch dims
// broadcast). After decompose it is in canonical form, which the lowering maps onto one strided-batched
// library call: both operands of the same rank >= 2, and each operand's batch dims either equal to the
// result's or all 1 (batch stride 0). The epilogue pass (codegen/gemm_epilogue) may then fold a bias add
// and an activation into it: attrs {"epilogue": "bias_relu", ...} and a third argument, the bias [.., N].
#pragma once
#include <string>

#include "ir/graph.h"
#include "ir/types.h"

namespace kforge {

struct MatmulDims {
  Shape batch;          // broadcast batch dims of the result
  int64_t m = 1, k = 1, n = 1;
  bool a_vector = false, b_vector = false;  // a 1-D operand: its dim is dropped from the result
  Shape result;         // batch + [m unless a_vector] + [n unless b_vector]
};

// torch.matmul's rules; throws UserError (naming both shapes) for a 0-d operand, inner dims that differ
// or batch dims that do not broadcast. `where` prefixes the message (the node).
MatmulDims matmul_dims(const Shape& a, const Shape& b, const std::string& where);

// Whether node `id` is a permute that swaps the last two dims and keeps the others: a matmul reads its
// source transposed (the library's transpose flag) instead of copying it.
bool is_matrix_transpose(const Graph& g, int id);

// Epilogues: what runs on each result element after the product, in this order: + bias[n], activation.
// gelu is GELU's tanh approximation, which is what cuBLASLt's GELU epilogue computes (PyTorch's
// _addmm_activation uses the same epilogue for approximate="tanh" only).
enum class Epilogue { none, bias, relu, bias_relu, gelu, bias_gelu };
std::string to_string(Epilogue e);
Epilogue epilogue_from_string(const std::string& s);  // UserError on an unknown name
bool has_bias(Epilogue e);
// The epilogue that also applies `activation` ("relu" or "gelu") after `e`; `e` unchanged if it has one.
Epilogue with_activation(Epilogue e, const std::string& activation);

}  // namespace kforge
