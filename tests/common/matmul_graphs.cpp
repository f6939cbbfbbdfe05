#include "common/matmul_graphs.h"

#include "common/graph_json.h"

namespace kforge::testing {

namespace {
using nlohmann::json;

// y = a @ b for inputs of the given shapes.
SampleGraph product(const std::string& name, std::vector<int64_t> a, std::vector<int64_t> b) {
  return {name, {{"inputs", {value("a", a), value("b", b)}}, {"nodes", {node("y", "matmul", {"a", "b"})}},
                 {"outputs", {"y"}}}};
}
// x [M, K] through a Linear layer with weight [N, K] (and bias [N]), then `activation` ("" for none).
SampleGraph linear(const std::string& name, int64_t m, int64_t k, int64_t n, bool bias, const std::string& activation,
                   json activation_attrs = json::object()) {
  json params = {value("w", {n, k})};
  json nodes = {node("wt", "permute", {"w"}, {{"dims", {1, 0}}}), node("mm", "matmul", {"x", "wt"})};
  std::string last = "mm";
  if (bias) {
    params.push_back(value("bias", {n}));
    nodes.push_back(node("biased", "add", {last, "bias"}));
    last = "biased";
  }
  if (!activation.empty()) {
    nodes.push_back(node("act", activation, {last}, activation_attrs));
    last = "act";
  }
  return {name, {{"inputs", {value("x", {m, k})}}, {"params", params}, {"nodes", nodes}, {"outputs", {last}}}};
}
}  // namespace

std::vector<SampleGraph> matmul_graphs() {
  std::vector<SampleGraph> g = {
      product("matmul_square", {64, 64}, {64, 64}),
      product("matmul_rectangular", {33, 65}, {65, 17}),
      product("matmul_bmm", {3, 19, 23}, {3, 23, 11}),
      product("matmul_vector_matrix", {29}, {29, 13}),
      product("matmul_3d_times_matrix", {4, 9, 31}, {31, 15}),
      product("matmul_4d_times_matrix", {2, 3, 7, 31}, {31, 15}),
      product("matmul_matrix_times_3d", {9, 31}, {4, 31, 15}),
      product("matmul_broadcast_batch", {2, 1, 9, 13}, {3, 13, 5}),
      product("matmul_large_k", {8, 2053}, {2053, 6}),
      product("matmul_very_long_k", {4, 12289}, {12289, 3}),
  };
  g.push_back({"matmul_transposed_a", {{"inputs", {value("a", {41, 19}), value("b", {41, 7})}},
                                       {"nodes", {node("at", "permute", {"a"}, {{"dims", {1, 0}}}),
                                                  node("y", "matmul", {"at", "b"})}},
                                       {"outputs", {"y"}}}});
  // A transposed matrix times a vector keeps the library product (decompose.cpp: matrix_vector would walk the
  // transposed rows strided): cuBLASLt with n = 1.
  g.push_back({"matmul_transposed_matrix_vector", {{"inputs", {value("a", {19, 41}), value("v", {19})}},
                                                   {"nodes", {node("at", "permute", {"a"}, {{"dims", {1, 0}}}),
                                                              node("y", "matmul", {"at", "v"})}},
                                                   {"outputs", {"y"}}}});
  g.push_back({"matmul_batched_transposed_both",
               {{"inputs", {value("a", {3, 23, 19}), value("b", {3, 11, 23})}},
                {"nodes", {node("at", "permute", {"a"}, {{"dims", {0, 2, 1}}}),
                           node("bt", "permute", {"b"}, {{"dims", {0, 2, 1}}}), node("y", "matmul", {"at", "bt"})}},
                {"outputs", {"y"}}}});
  // Transposed views that meet a matrix of another rank: read in place, not folded or copied.
  g.push_back({"matmul_transposed_3d_times_matrix",
               {{"inputs", {value("a", {4, 31, 9}), value("b", {31, 15})}},
                {"nodes", {node("at", "permute", {"a"}, {{"dims", {0, 2, 1}}}), node("y", "matmul", {"at", "b"})}},
                {"outputs", {"y"}}}});
  g.push_back({"matmul_transposed_matrix_times_3d",
               {{"inputs", {value("a", {31, 9}), value("b", {4, 31, 15})}},
                {"nodes", {node("at", "permute", {"a"}, {{"dims", {1, 0}}}), node("y", "matmul", {"at", "b"})}},
                {"outputs", {"y"}}}});
  // A bias shared by every batch entry (cuBLASLt's bias batch stride 0).
  g.push_back({"matmul_bmm_bias_relu",
               {{"inputs", {value("a", {3, 19, 23}), value("b", {3, 23, 11}), value("c", {11})}},
                {"nodes", {node("mm", "matmul", {"a", "b"}), node("biased", "add", {"c", "mm"}),
                           node("y", "relu", {"biased"})}},
                {"outputs", {"y"}}}});
  // torch.triu of a product: cuBLASLt steps over row blocks, each reading and writing at offsets
  // (emit_matmul.cpp's triangle_blocks), then the triangle op.
  g.push_back({"matmul_triu", {{"inputs", {value("a", {530, 24}), value("b", {24, 530})}},
                               {"nodes", {node("p", "matmul", {"a", "b"}),
                                          node("y", "triangle", {"p"}, {{"upper", true}, {"diagonal", 1}})}},
                               {"outputs", {"y"}}}});
  g.push_back(linear("linear_no_bias", 45, 70, 21, false, ""));
  g.push_back(linear("linear_bias", 45, 70, 21, true, ""));
  g.push_back(linear("linear_bias_relu", 45, 70, 21, true, "relu"));
  g.push_back(linear("linear_relu", 45, 70, 21, false, "relu"));
  g.push_back(linear("linear_bias_gelu_tanh", 45, 70, 21, true, "gelu", {{"approximate", "tanh"}}));
  g.push_back(linear("linear_bias_gelu_erf", 45, 70, 21, true, "gelu", {{"approximate", "none"}}));
  g.push_back(linear("linear_bias_sigmoid", 45, 70, 21, true, "sigmoid"));
  return g;
}

nlohmann::json matmul_graph(const std::string& name) { return find_graph(matmul_graphs(), name); }

}  // namespace kforge::testing
