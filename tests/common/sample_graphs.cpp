#include "common/sample_graphs.h"
#include <stdexcept>

#include "common/graph_json.h"

namespace kforge::testing {

namespace {
using nlohmann::json;

json input(const std::string& name, std::vector<int64_t> shape, const std::string& dtype = "f32") {
  return {{"name", name}, {"shape", shape}, {"dtype", dtype}};
}
SampleGraph unary(const std::string& op, std::vector<int64_t> shape, json attrs = json::object()) {
  return {op, unary_graph(op, std::move(shape), std::move(attrs))};
}
}  // namespace

nlohmann::json unary_graph(const std::string& op, std::vector<int64_t> shape, nlohmann::json attrs) {
  return {{"inputs", {input("x", shape)}}, {"nodes", {node("y", op, {"x"}, attrs)}}, {"outputs", {"y"}}};
}

std::vector<SampleGraph> sample_graphs() {
  std::vector<SampleGraph> g;
  for (auto op : {"relu", "sigmoid", "tanh", "silu", "softsign", "selu", "hardsigmoid", "hardswish", "mish", "exp", "abs",
                  "floor", "ceil", "round", "trunc", "expm1", "tan", "atan", "sinh", "cosh"})
    g.push_back(unary(op, {3, 37, 5}));
  g.push_back(unary("gelu", {4, 1001}, {{"approximate", "none"}}));
  g.back().name = "gelu";
  g.push_back(unary("gelu", {4, 1001}, {{"approximate", "tanh"}}));
  g.back().name = "gelu_tanh";
  g.push_back(unary("leaky_relu", {1000}, {{"negative_slope", 0.02}}));
  g.push_back(unary("elu", {1000}, {{"alpha", 0.7}}));
  g.push_back(unary("hardtanh", {1000}, {{"min_val", -0.5}, {"max_val", 0.75}}));
  g.push_back(unary("softplus", {1000}, {{"beta", 2.0}, {"threshold", 10.0}}));
  g.push_back(unary("clamp", {1000}, {{"min", -0.3}, {"max", nullptr}}));
  // torch.tril(x, -1) / torch.triu(x, 2): a value that depends on the element's (row, column).
  g.push_back(unary("triangle", {3, 36, 41}, {{"upper", false}, {"diagonal", -1}}));
  g.back().name = "tril";
  g.push_back({"triu_row_sum", {{"inputs", {input("x", {5, 33, 70})}},
                                {"nodes", {node("t", "triangle", {"x"}, {{"upper", true}, {"diagonal", 2}}),
                                           node("y", "sum", {"t"}, {{"dims", {2}}, {"keepdim", false}})}},
                                {"outputs", {"y"}}}});
  // torch.cat: parts read at their own positions (a permuted part through its strides; a computed part stored
  // first), then work after it in the same kernel; and a concatenation feeding a row's softmax.
  g.push_back({"cat_middle_relu", {{"inputs", {input("a", {3, 5, 7}), input("b", {3, 2, 7}), input("c", {7, 3, 3})}},
                                   {"nodes", {node("cp", "permute", {"c"}, {{"dims", {1, 2, 0}}}),
                                              node("cat", "cat", {"a", "b", "cp"}, {{"dim", 1}}),
                                              node("y", "relu", {"cat"})}},
                                   {"outputs", {"y"}}}});
  // A literal tensor of forward (torch.tensor([...]) there), as the importer writes it: one constant an element
  // concatenated, here a constant part too; no part is stored, the concatenation writes each value where it lies.
  {
    nlohmann::json nodes = nlohmann::json::array(), parts = nlohmann::json::array();
    for (int k = 0; k < 5; ++k) {
      const std::string c = "c" + std::to_string(k), r = "r" + std::to_string(k);
      nodes.push_back(node(c, "const", {}, {{"value", 0.5 * k - 1.0}}));
      nodes.push_back(node(r, "reshape", {c}, {{"shape", {1}}}));
      parts.push_back(r);
    }
    nodes.push_back(node("last", "const", {}, {{"value", 7.0}}));
    nodes.push_back(node("tail", "expand", {"last"}, {{"shape", {1}}}));
    parts.push_back("tail");
    nodes.push_back(node("flat", "cat", parts.get<std::vector<std::string>>(), {{"dim", 0}}));
    nodes.push_back(node("literal", "reshape", {"flat"}, {{"shape", {2, 3}}}));
    nodes.push_back(node("y", "add", {"x", "literal"}));
    g.push_back({"literal_tensor_add", {{"inputs", {input("x", {4, 2, 3})}}, {"nodes", nodes}, {"outputs", {"y"}}}});
  }
  // Slices (x[:, 1:8:2], a narrow): strided views read in place, here the two halves of a row swapped.
  g.push_back({"slices_swapped_halves", {{"inputs", {input("x", {5, 3, 40})}},
                                         {"nodes", {node("lo", "slice", {"x"}, {{"dim", 2}, {"start", 0}, {"end", 20}, {"step", 1}}),
                                                    node("hi", "slice", {"x"}, {{"dim", 2}, {"start", 21}, {"end", 40}, {"step", 1}}),
                                                    node("odd", "slice", {"x"}, {{"dim", 2}, {"start", 1}, {"end", 3}, {"step", 2}}),
                                                    node("y", "cat", {"hi", "odd", "lo"}, {{"dim", 2}})}},
                                         {"outputs", {"y"}}}});
  // A slice of a permuted input read with its dim of one dropped (attention's qkv[0] as a [B, H, T, D] operand): a
  // reshape that only drops a dim of one is a strided view, so no kernel copies the slice first.
  g.push_back({"slice_squeezed", {{"inputs", {input("x", {3, 4, 5, 6})}},
                                  {"nodes", {node("xp", "permute", {"x"}, {{"dims", {1, 0, 2, 3}}}),
                                             node("s", "slice", {"xp"}, {{"dim", 0}, {"start", 2}, {"end", 3}, {"step", 1}}),
                                             node("q", "reshape", {"s"}, {{"shape", {3, 1, 5, 6}}}),
                                             node("q2", "reshape", {"q"}, {{"shape", {3, 5, 6}}}), node("y", "tanh", {"q2"})}},
                                  {"outputs", {"y"}}}});
  g.push_back({"cat_of_a_computed_part", {{"inputs", {input("a", {4, 33}), input("b", {4, 7})}},
                                          {"nodes", {node("ea", "exp", {"a"}), node("y", "cat", {"b", "ea"}, {{"dim", 1}})}},
                                          {"outputs", {"y"}}}});
  g.push_back({"cat_last_softmax", {{"inputs", {input("a", {9, 300}), input("b", {9, 213})}},
                                    {"nodes", {node("cat", "cat", {"a", "b"}, {{"dim", 1}}),
                                               node("y", "softmax", {"cat"}, {{"dim", 1}})}},
                                    {"outputs", {"y"}}}});
  // Paddings (ir/pad.h) read at mirrored, clamped or wrapped positions, or filled: through a permuted view, in three
  // dims at once, feeding a row softmax, and squared where the fill lies.
  auto pad = [](const std::string& name, const std::string& x, std::vector<int64_t> pads, const std::string& mode) {
    nlohmann::json attrs = {{"pads", pads}, {"mode", mode}};
    if (mode == "constant") attrs["value"] = -1.5;
    return node(name, "pad", {x}, attrs);
  };
  g.push_back({"pad_reflect_permuted_tanh", {{"inputs", {input("c", {7, 3, 5})}},
                                             {"nodes", {node("cp", "permute", {"c"}, {{"dims", {1, 2, 0}}}),
                                                        pad("p", "cp", {0, 0, 2, 1, 1, 3}, "reflect"), node("y", "tanh", {"p"})}},
                                             {"outputs", {"y"}}}});
  g.push_back({"pad_replicate_3d", {{"inputs", {input("x", {2, 3, 4, 5, 6})}},
                                    {"nodes", {pad("p", "x", {0, 0, 0, 0, 1, 2, 0, 1, 2, 2}, "replicate"), node("y", "relu", {"p"})}},
                                    {"outputs", {"y"}}}});
  g.push_back({"pad_circular_softmax", {{"inputs", {input("x", {6, 10})}},
                                        {"nodes", {pad("p", "x", {1, 2, 3, 4}, "circular"), node("y", "softmax", {"p"}, {{"dim", 1}})}},
                                        {"outputs", {"y"}}}});
  g.push_back({"pad_of_arithmetic", {{"inputs", {input("x", {2, 3, 5, 6}), input("w", {3, 1, 1})}},
                                     {"nodes", {node("m", "mul", {"x", "w"}), node("r", "relu", {"m"}),
                                                pad("p", "r", {0, 0, 0, 0, 1, 2, 2, 1}, "reflect"), node("y", "tanh", {"p"})}},
                                     {"outputs", {"y"}}}});
  g.push_back({"pad_transposed", {{"inputs", {input("x", {2, 3, 33, 40})}},
                                  {"nodes", {node("r", "relu", {"x"}), pad("p", "r", {0, 0, 0, 0, 2, 1, 1, 2}, "reflect"),
                                             node("y", "permute", {"p"}, {{"dims", {0, 2, 3, 1}}, {"materialize", true}})}},
                                  {"outputs", {"y"}}}});
  g.push_back({"pad_of_centred_rows", {{"inputs", {input("x", {4, 7, 9})}},
                                       {"nodes", {node("mu", "mean", {"x"}, {{"dims", {2}}, {"keepdim", true}}),
                                                  node("d", "sub", {"x", "mu"}), pad("y", "d", {0, 0, 1, 1, 2, 0}, "constant")}},
                                       {"outputs", {"y"}}}});
  g.push_back({"pad_constant_squared", {{"inputs", {input("x", {3, 4, 5})}},
                                        {"nodes", {pad("p", "x", {0, 0, 2, 1, 1, 2}, "constant"), node("y", "mul", {"p", "p"})}},
                                        {"outputs", {"y"}}}});
  // Products with one output column lower to a reduction over K (ir/decompose.cpp, matrix_vector): a matrix
  // times a vector, and a Linear layer with one output feature (its weight read transposed), bias and ReLU after.
  g.push_back({"matrix_vector", {{"inputs", {input("a", {37, 29}), input("v", {29})}},
                                 {"nodes", {node("y", "matmul", {"a", "v"})}},
                                 {"outputs", {"y"}}}});
  g.push_back({"linear_one_output", {{"inputs", {input("x", {45, 70})}},
                                     {"params", {input("w", {1, 70}), input("bias", {1})}},
                                     {"nodes", {node("wt", "permute", {"w"}, {{"dims", {1, 0}}}), node("mm", "matmul", {"x", "wt"}),
                                                node("biased", "add", {"mm", "bias"}), node("y", "relu", {"biased"})}},
                                     {"outputs", {"y"}}}});
  for (auto op : {"sum", "mean", "amax", "amin", "prod"}) {
    g.push_back(unary(op, {6, 129, 7}, {{"dims", {1}}, {"keepdim", false}}));
    g.back().name = std::string(op) + "_middle";
    g.push_back(unary(op, {33, 515}, {{"dims", {1}}, {"keepdim", true}}));
    g.back().name = std::string(op) + "_last";
  }
  g.push_back(unary("sum", {40, 3000}, {{"dims", json::array()}, {"keepdim", false}}));
  g.back().name = "sum_all";
  g.push_back(unary("argmax", {9, 301}, {{"dim", 1}, {"keepdim", false}}));
  g.push_back(unary("argmin", {5, 77, 6}, {{"dim", 1}, {"keepdim", false}}));
  g.push_back(unary("softmax", {17, 1023}, {{"dim", 1}}));
  g.push_back(unary("log_softmax", {3, 19, 11}, {{"dim", 1}}));
  g.push_back(unary("vector_norm", {12, 50}, {{"ord", 2}, {"dims", {1}}, {"keepdim", true}}));
  g.push_back(unary("var", {12, 50}, {{"dims", {1}}, {"keepdim", false}, {"correction", 1}}));
  g.push_back(unary("cumsum", {7, 1500}, {{"dim", 1}, {"reverse", false}}));
  g.back().name = "cumsum_last";
  g.push_back(unary("cumsum", {4, 300, 5}, {{"dim", 1}, {"reverse", true}}));
  g.back().name = "cumsum_reverse_middle";
  g.push_back(unary("cumprod", {5, 200}, {{"dim", 1}, {"reverse", false}}));
  g.push_back(unary("cummax", {6, 700}, {{"dim", 1}, {"reverse", false}}));
  g.push_back(unary("cummin", {5, 40, 3}, {{"dim", 1}, {"reverse", true}}));
  g.push_back(unary("logcumsumexp", {6, 900}, {{"dim", 1}, {"reverse", false}}));
  g.push_back(unary("max_pool", {2, 3, 17, 19}, {{"nd", 2}, {"kernel", {3, 2}}, {"stride", {2, 2}}, {"padding", {1, 1}}, {"dilation", {1, 2}}}));
  g.push_back(unary("avg_pool", {2, 3, 9, 8, 7}, {{"nd", 3}, {"kernel", {3, 3, 2}}, {"stride", {2, 1, 2}}, {"padding", {1, 0, 1}}, {"count_include_pad", true}}));
  g.push_back(unary("avg_pool", {2, 3, 31}, {{"nd", 1}, {"kernel", {4}}, {"stride", {3}}, {"padding", {2}}, {"count_include_pad", false}}));
  g.back().name = "avg_pool1d_exclude_pad";
  g.push_back(unary("avg_pool", {2, 3, 10, 13}, {{"nd", 2}, {"kernel", {3, 2}}, {"stride", {2, 2}}, {"padding", {1, 0}},
                                                  {"count_include_pad", false}, {"ceil_mode", true}}));
  g.back().name = "avg_pool_ceil_mode";
  g.push_back(unary("max_pool", {2, 3, 10, 13, 7}, {{"nd", 3}, {"adaptive", true}, {"output", {3, 5, 7}}}));
  g.back().name = "adaptive_max_pool";
  // Norms with affine parameters.
  g.push_back({"layer_norm", {{"inputs", {input("x", {6, 7, 33})}}, {"params", {input("w", {7, 33}), input("b", {7, 33})}},
                              {"nodes", {node("y", "layer_norm", {"x", "w", "b"}, {{"normalized_ndim", 2}, {"eps", 1e-5}})}}, {"outputs", {"y"}}}});
  g.push_back({"batch_norm", {{"inputs", {input("x", {4, 6, 5, 7})}}, {"params", {input("w", {6}), input("b", {6})}},
                              {"nodes", {node("y", "batch_norm", {"x", "w", "b"}, {{"eps", 1e-5}})}}, {"outputs", {"y"}}}});
  g.push_back({"group_norm", {{"inputs", {input("x", {3, 8, 5, 6})}}, {"params", {input("w", {8}), input("b", {8})}},
                              {"nodes", {node("y", "group_norm", {"x", "w", "b"}, {{"groups", 4}, {"eps", 1e-5}})}}, {"outputs", {"y"}}}});
  g.push_back({"instance_norm", {{"inputs", {input("x", {3, 4, 9, 10})}},
                                 {"nodes", {node("y", "instance_norm", {"x", "", ""}, {{"eps", 1e-5}})}}, {"outputs", {"y"}}}});
  g.push_back({"rms_norm", {{"inputs", {input("x", {5, 64})}}, {"params", {input("w", {64})}},
                            {"nodes", {node("y", "rms_norm", {"x", "w"}, {{"normalized_ndim", 1}, {"eps", 1e-6}})}}, {"outputs", {"y"}}}});
  g.push_back({"var_unbiased", {{"inputs", {input("x", {6, 300})}},
                                {"nodes", {node("y", "var", {"x"}, {{"dims", {1}}, {"correction", 1.0}, {"keepdim", false}})}}, {"outputs", {"y"}}}});
  // Losses.
  auto two = [&](const std::string& op, std::vector<int64_t> shape, json attrs) {
    return SampleGraph{op, {{"inputs", {input("a", shape), input("b", shape)}}, {"nodes", {node("y", op, {"a", "b"}, attrs)}}, {"outputs", {"y"}}}};
  };
  g.push_back(two("mse_loss", {30, 41}, {{"reduction", "mean"}}));
  g.push_back(two("huber_loss", {30, 41}, {{"reduction", "mean"}, {"delta", 0.5}}));
  g.push_back(two("smooth_l1_loss", {30, 41}, {{"reduction", "sum"}, {"beta", 1.0}}));
  g.push_back(two("cosine_similarity", {30, 41}, {{"dim", 1}, {"eps", 1e-8}}));
  g.push_back({"cross_entropy", {{"inputs", {input("x", {13, 29}), input("t", {13}, "i64")}},
                                 {"nodes", {node("y", "cross_entropy", {"x", "t"}, {{"reduction", "mean"}})}}, {"outputs", {"y"}}}});
  g.push_back({"triplet", {{"inputs", {input("a", {11, 20}), input("p", {11, 20}), input("n", {11, 20})}},
                           {"nodes", {node("y", "triplet_margin_loss", {"a", "p", "n"}, {{"reduction", "mean"}, {"margin", 1.0}, {"p", 2.0}, {"eps", 1e-6}})}}, {"outputs", {"y"}}}});
  // Fusion chains and broadcasts.
  g.push_back({"chain_broadcast", {{"inputs", {input("x", {4, 6, 5, 7}), input("gate", {6, 1, 1})}},
                                   {"nodes", {node("two", "const", {}, {{"value", 2.0}}), node("m", "mul", {"x", "two"}),
                                              node("s", "sigmoid", {"gate"}), node("p", "mul", {"m", "s"}),
                                              node("y", "tanh", {"p"})}}, {"outputs", {"y"}}}});
  g.push_back({"masked_cumsum", {{"inputs", {input("x", {6, 99}), input("mask", {6, 99}, "bool")}},
                                 {"nodes", {node("xf", "cast", {"mask"}, {{"dtype", "f32"}}), node("m", "mul", {"x", "xf"}),
                                            node("y", "cumsum", {"m"}, {{"dim", 1}, {"reverse", false}})}}, {"outputs", {"y"}}}});
  g.push_back({"exclusive_cumsum", {{"inputs", {input("x", {5, 130})}},
                                    {"nodes", {node("c", "cumsum", {"x"}, {{"dim", 1}, {"reverse", false}}), node("y", "sub", {"c", "x"})}}, {"outputs", {"y"}}}});
  g.push_back({"permute_copy", {{"inputs", {input("x", {5, 6, 7})}},
                                {"nodes", {node("p", "permute", {"x"}, {{"dims", {2, 0, 1}}}), node("y", "relu", {"p"})}}, {"outputs", {"y"}}}});
  g.push_back({"frobenius", {{"inputs", {input("x", {8, 33})}},
                             {"nodes", {node("n", "vector_norm", {"x"}, {{"ord", 2}, {"dims", json::array()}, {"keepdim", false}}),
                                        node("y", "div", {"x", "n"})}}, {"outputs", {"y"}}}});
  g.push_back({"flip_cumsum_flip", {{"inputs", {input("x", {4, 50})}},
                                    {"nodes", {node("f", "flip", {"x"}, {{"dims", {1}}}), node("c", "cumsum", {"f"}, {{"dim", 1}, {"reverse", false}}),
                                               node("y", "flip", {"c"}, {{"dims", {1}}})}}, {"outputs", {"y"}}}});
  // Regressions from the first codegen review: stored views, non-f32 operands in vector kernels,
  // members read through views, a group cycle.
  auto raw = [&](const std::string& name, const std::string& text) { g.push_back({name, json::parse(text)}); };
  raw("review_permute_reshape", R"({"inputs": [{"name": "x", "shape": [64, 32]}], "nodes": [
      {"name": "p", "op": "permute", "args": ["x"], "attrs": {"dims": [1, 0]}},
      {"name": "r", "op": "reshape", "args": ["p"], "attrs": {"shape": [2048]}},
      {"name": "y", "op": "relu", "args": ["r"]}], "outputs": ["y"]})");
  raw("review_flip_output", R"({"inputs": [{"name": "x", "shape": [64, 32]}], "nodes": [
      {"name": "r", "op": "relu", "args": ["x"]}, {"name": "y", "op": "flip", "args": ["r"], "attrs": {"dims": [1]}}],
      "outputs": ["y"]})");
  raw("review_bool_vector", R"({"inputs": [{"name": "x", "shape": [4096]}, {"name": "m", "shape": [4096], "dtype": "bool"}],
      "nodes": [{"name": "mf", "op": "cast", "args": ["m"], "attrs": {"dtype": "f32"}},
                {"name": "y", "op": "mul", "args": ["x", "mf"]}], "outputs": ["y"]})");
  raw("review_argmax_cast", R"({"inputs": [{"name": "x", "shape": [64, 128]}], "nodes": [
      {"name": "a", "op": "argmax", "args": ["x"], "attrs": {"dim": 1, "keepdim": false}},
      {"name": "y", "op": "cast", "args": ["a"], "attrs": {"dtype": "f32"}}], "outputs": ["y"]})");
  raw("review_expand_stat", R"({"inputs": [{"name": "x", "shape": [64, 1024]}], "nodes": [
      {"name": "s", "op": "sum", "args": ["x"], "attrs": {"dims": [1], "keepdim": true}},
      {"name": "e", "op": "expand", "args": ["s"], "attrs": {"shape": [64, 1024]}},
      {"name": "y", "op": "div", "args": ["x", "e"]}], "outputs": ["y"]})");
  raw("review_flip_scan", R"({"inputs": [{"name": "x", "shape": [8, 1000]}], "nodes": [
      {"name": "c", "op": "cumsum", "args": ["x"], "attrs": {"dim": 1, "reverse": false}},
      {"name": "f", "op": "flip", "args": ["c"], "attrs": {"dims": [1]}},
      {"name": "y", "op": "add", "args": ["c", "f"]}], "outputs": ["y"]})");
  // A row cache just under 48 KB (12281 floats): with the kernel's static scratch it needs the shared-memory
  // opt-in (without it, cuLaunchKernel said "invalid argument" on 32_l2_normalize_rows).
  raw("review_row_cache_near_48k", R"({"inputs": [{"name": "x", "shape": [3, 12281]}], "nodes": [
      {"name": "q", "op": "mul", "args": ["x", "x"]},
      {"name": "s", "op": "sum", "args": ["q"], "attrs": {"dims": [1], "keepdim": true}},
      {"name": "y", "op": "div", "args": ["x", "s"]}], "outputs": ["y"]})");
  raw("review_group_cycle", R"({"inputs": [{"name": "x", "shape": [4, 128]}], "nodes": [
      {"name": "c", "op": "cumsum", "args": ["x"], "attrs": {"dim": 1, "reverse": false}},
      {"name": "s1", "op": "sum", "args": ["x"], "attrs": {"dims": [1], "keepdim": true}},
      {"name": "o1", "op": "mul", "args": ["c", "s1"]}, {"name": "t", "op": "add", "args": ["c", "s1"]},
      {"name": "o2", "op": "sum", "args": ["t"], "attrs": {"dims": [1], "keepdim": true}}], "outputs": ["o1", "o2"]})");
  // Half precision at a task's boundary (ir/types.h): f16 / bf16 inputs read through a cast to f32, results cast
  // back; pointwise, a row's softmax and layer norm, and an f32 result from a half input.
  raw("half_gelu_scale", R"({"inputs": [{"name": "x", "shape": [4, 1000], "dtype": "f16"}], "nodes": [
      {"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
      {"name": "g", "op": "gelu", "args": ["xf"], "attrs": {"approximate": "none"}},
      {"name": "two", "op": "const", "attrs": {"value": 2.0}},
      {"name": "m", "op": "mul", "args": ["g", "two"]},
      {"name": "y", "op": "cast", "args": ["m"], "attrs": {"dtype": "f16"}}], "outputs": ["y"]})");
  raw("bf16_softmax_rows", R"({"inputs": [{"name": "x", "shape": [6, 333], "dtype": "bf16"}], "nodes": [
      {"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
      {"name": "s", "op": "softmax", "args": ["xf"], "attrs": {"dim": 1}},
      {"name": "y", "op": "cast", "args": ["s"], "attrs": {"dtype": "bf16"}}], "outputs": ["y"]})");
  // rows of whole vectors: a block's walk moves 2 or 4 16-bit patterns a load and a store
  raw("f16_layer_norm_rows", R"({"inputs": [{"name": "x", "shape": [6, 8, 40], "dtype": "f16"}],
      "params": [{"name": "w", "shape": [8, 40]}, {"name": "b", "shape": [8, 40]}], "nodes": [
      {"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
      {"name": "n", "op": "layer_norm", "args": ["xf", "w", "b"], "attrs": {"normalized_ndim": 2, "eps": 1e-5}},
      {"name": "y", "op": "cast", "args": ["n"], "attrs": {"dtype": "f16"}}], "outputs": ["y"]})");
  raw("half_max_pool", R"({"inputs": [{"name": "x", "shape": [2, 3, 17, 19], "dtype": "f16"}], "nodes": [
      {"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
      {"name": "p", "op": "pool", "args": ["xf"], "attrs": {"kind": "max", "nd": 2, "kernel": [3, 2], "stride": [2, 2],
       "padding": [1, 1], "dilation": [1, 2]}},
      {"name": "y", "op": "cast", "args": ["p"], "attrs": {"dtype": "f16"}}], "outputs": ["y"]})");
  // Two stored values of one shape, the second computed from the first: one pointwise kernel writes both.
  raw("residual_and_activation", R"({"inputs": [{"name": "x", "shape": [6, 52]}, {"name": "y", "shape": [52]}], "nodes": [
      {"name": "s", "op": "add", "args": ["x", "y"]},
      {"name": "t", "op": "tanh", "args": ["s"]},
      {"name": "two", "op": "const", "attrs": {"value": 2.0}},
      {"name": "r", "op": "mul", "args": ["t", "two"]}], "outputs": ["r", "s"]})");
  raw("half_and_f32_add", R"({"inputs": [{"name": "a", "shape": [8, 96], "dtype": "bf16"}, {"name": "b", "shape": [8, 96]}],
      "nodes": [{"name": "af", "op": "cast", "args": ["a"], "attrs": {"dtype": "f32"}},
      {"name": "y", "op": "add", "args": ["af", "b"]}], "outputs": ["y"]})");
  return g;
}

nlohmann::json find_graph(const std::vector<SampleGraph>& samples, const std::string& name) {
  for (auto& s : samples)
    if (s.name == name) return s.graph;
  throw std::runtime_error("no sample graph named " + name);
}

nlohmann::json sample_graph(const std::string& name) { return find_graph(sample_graphs(), name); }

}  // namespace kforge::testing
