// Graphs of one attention (softmax(q k^T * scale [+ mask]) v) as a model writes it, for the codegen and GPU tests:
// high-level ops (matmul, softmax), which decompose and codegen/attention_fusion.h turn into ir/attention.h's pair.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge::testing {

enum class Mask {
  none,
  causal,       // where(tril(ones) as bool, s, -inf): F.scaled_dot_product_attention's is_causal
  filled_tril,  // where(tril(ones) == 0, -inf, s): masked_fill of a tril computed in forward
  bool_input,   // where(mask, s, -inf), the mask a graph input [L, S]
  additive,     // s + bias, the bias a graph input [L, S]
};

struct AttentionCase {
  std::string name;
  std::vector<int64_t> batch = {2, 3};  // the heads' batch dims
  int64_t rows = 20, keys = 24, head = 16, value_head = 16;
  Mask mask = Mask::none;
  bool k_rows = true;   // K given as [.., S, D] and transposed by a permute (else Kt [.., D, S] as stored)
  bool shared_v = false;  // V one [1.., S, Dv] for every head (broadcast)
  int64_t diagonal = 0;   // the triangle's, for the masks made of one
  std::string dtype = "f32";  // f16, bf16: q, k, v and the result in that dtype (a half-precision task's)
};

nlohmann::json attention_graph(const AttentionCase& c);
// Small cases, every mask and operand form: a few blocks (the CPU runner's reach).
std::vector<AttentionCase> small_attention_cases();
// Cases at a GPU's sizes too: many query and key tiles, head dims 64 and 128, causal and not.
std::vector<AttentionCase> gpu_attention_cases();

}  // namespace kforge::testing
