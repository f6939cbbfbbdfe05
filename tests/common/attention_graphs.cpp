#include "common/attention_graphs.h"

#include <cmath>
#include <limits>

#include "common/graph_json.h"

namespace kforge::testing {

nlohmann::json attention_graph(const AttentionCase& c) {
  const int64_t L = c.rows, S = c.keys, D = c.head, Dv = c.value_head;
  auto with = [&](std::vector<int64_t> tail, bool shared = false) {
    std::vector<int64_t> s = shared ? std::vector<int64_t>(c.batch.size(), 1) : c.batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  const int64_t rank = int64_t(c.batch.size()) + 2;
  std::vector<int64_t> swap;
  for (int64_t i = 0; i < rank; ++i) swap.push_back(i);
  std::swap(swap[size_t(rank - 2)], swap[size_t(rank - 1)]);
  const bool half = c.dtype != "f32";
  // A half-precision task's tensors are read through casts to f32 (ir/types.h); "q" is then the cast, "q_h" the input.
  const std::string h = half ? "_h" : "";
  nlohmann::json inputs = {value("q" + h, with({L, D})), c.k_rows ? value("k" + h, with({S, D})) : value("kt" + h, with({D, S})),
                           value("v" + h, with({S, Dv}, c.shared_v))};
  nlohmann::json nodes = nlohmann::json::array();
  if (half)
    for (auto& in : inputs) {
      in["dtype"] = c.dtype;
      const std::string name = in["name"];
      nodes.push_back(node(name.substr(0, name.size() - 2), "cast", {name}, {{"dtype", "f32"}}));
    }
  if (c.k_rows) nodes.push_back(node("kt", "permute", {"k"}, {{"dims", swap}}));
  nodes.push_back(node("qk", "matmul", {"q", "kt"}));
  nodes.push_back(node("scale", "const", {}, {{"value", 1.0 / std::sqrt(double(D))}}));
  nodes.push_back(node("scaled", "mul", {"qk", "scale"}));
  const double inf = std::numeric_limits<double>::infinity();
  std::string s = "scaled";
  if (c.mask == Mask::causal || c.mask == Mask::filled_tril) {
    nodes.push_back(node("one", "const", {}, {{"value", 1.0}}));
    nodes.push_back(node("ones", "expand", {"one"}, {{"shape", {L, S}}}));
    nodes.push_back(node("tril", "triangle", {"ones"}, {{"upper", false}, {"diagonal", c.diagonal}}));
    nodes.push_back(node("minus_inf", "const", {}, {{"value", -inf}}));
    if (c.mask == Mask::causal) {
      nodes.push_back(node("keep", "cast", {"tril"}, {{"dtype", "bool"}}));
      nodes.push_back(node("masked", "where", {"keep", "scaled", "minus_inf"}));
    } else {
      nodes.push_back(node("zero", "const", {}, {{"value", 0.0}}));
      nodes.push_back(node("drop", "eq", {"tril", "zero"}));
      nodes.push_back(node("masked", "where", {"drop", "minus_inf", "scaled"}));
    }
    s = "masked";
  } else if (c.mask == Mask::bool_input) {
    inputs.push_back({{"name", "mask"}, {"shape", {L, S}}, {"dtype", "bool"}});
    nodes.push_back(node("minus_inf", "const", {}, {{"value", -inf}}));
    nodes.push_back(node("masked", "where", {"mask", "scaled", "minus_inf"}));
    s = "masked";
  } else if (c.mask == Mask::additive) {
    inputs.push_back(value("bias", {L, S}));
    nodes.push_back(node("biased", "add", {"scaled", "bias"}));
    s = "biased";
  }
  nodes.push_back(node("weights", "softmax", {s}, {{"dim", rank - 1}}));
  nodes.push_back(node("y", "matmul", {"weights", "v"}));
  if (half) nodes.push_back(node("out", "cast", {"y"}, {{"dtype", c.dtype}}));
  return {{"inputs", inputs}, {"params", nlohmann::json::array()}, {"nodes", nodes}, {"outputs", {half ? "out" : "y"}}};
}

std::vector<AttentionCase> small_attention_cases() {
  std::vector<AttentionCase> out = {{"plain"},
                                    {"causal", {2}, 40, 40, 16, 16, Mask::causal},
                                    {"causal_below_diagonal", {1, 2}, 37, 70, 8, 24, Mask::causal, true, false, -3},
                                    {"filled_tril", {3}, 33, 33, 12, 12, Mask::filled_tril},
                                    {"bool_mask", {2, 2}, 17, 29, 16, 16, Mask::bool_input},
                                    {"additive_mask", {2}, 21, 67, 32, 8, Mask::additive},
                                    {"kt_stored_shared_v", {2, 2}, 19, 23, 5, 7, Mask::none, false, true},
                                    {"one_head", {}, 35, 9, 4, 70},
                                    {"head_64", {1}, 20, 24, 64, 64}};  // tf32x3 split as read (AttentionTile)
  AttentionCase f16{"f16_causal", {2}, 40, 70, 16, 24, Mask::causal}, bf16{"bf16_kt_stored", {2, 2}, 19, 23, 5, 7};
  f16.dtype = "f16", bf16.dtype = "bf16", bf16.k_rows = false;
  out.push_back(f16), out.push_back(bf16);
  // 16-bit tiles by copies (emit_attention.cpp, stage_by_copies): a head of 24 (its chunk 3 of 4 a pad of zeros)
  // over three key tiles, the last partial; V shared by every head (a batch stride of 0).
  AttentionCase padded{"f16_head_24_additive", {2}, 33, 130, 24, 16, Mask::additive},
      shared{"bf16_causal_shared_v", {2, 2}, 45, 45, 32, 40, Mask::causal, true, true};
  padded.dtype = "f16", shared.dtype = "bf16";
  out.push_back(padded), out.push_back(shared);
  return out;
}

std::vector<AttentionCase> gpu_attention_cases() {
  std::vector<AttentionCase> out = small_attention_cases();
  out.push_back({"d64_1024", {2, 4}, 1024, 1024, 64, 64});
  out.push_back({"d64_1024_causal", {2, 4}, 1024, 1024, 64, 64, Mask::causal});
  out.push_back({"d128_513_causal", {3}, 513, 513, 128, 128, Mask::causal});
  out.push_back({"d128_cross", {2, 2}, 300, 777, 128, 128, Mask::bool_input});
  out.push_back({"d256", {2}, 200, 200, 256, 256});
  for (const char* dtype : {"f16", "bf16"}) {
    AttentionCase h{std::string(dtype) + "_d64_1024_causal", {2, 4}, 1024, 1024, 64, 64, Mask::causal},
        cross{std::string(dtype) + "_d128_cross", {2, 2}, 300, 777, 128, 128, Mask::bool_input};
    h.dtype = cross.dtype = dtype;
    out.push_back(h), out.push_back(cross);
  }
  return out;
}

}  // namespace kforge::testing
