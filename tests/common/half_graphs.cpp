#include "common/half_graphs.h"

namespace kforge::testing {

namespace {
// `text` with every "DT" replaced by the dtype.
nlohmann::json in_dtype(std::string text, const std::string& dtype) {
  for (size_t at = text.find("DT"); at != std::string::npos; at = text.find("DT", at + dtype.size()))
    text.replace(at, 2, dtype);
  return nlohmann::json::parse(text);
}
}  // namespace

nlohmann::json half_linear(const std::string& dtype, int64_t k) {
  const std::string K = std::to_string(k);
  return in_dtype(R"({"inputs": [{"name": "x", "shape": [32, )" + K + R"(], "dtype": "DT"}],
        "params": [{"name": "w", "shape": [64, )" + K + R"(], "dtype": "DT"}, {"name": "bias", "shape": [64], "dtype": "DT"}],
        "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
                  {"name": "wf", "op": "cast", "args": ["w"], "attrs": {"dtype": "f32"}},
                  {"name": "bf", "op": "cast", "args": ["bias"], "attrs": {"dtype": "f32"}},
                  {"name": "wt", "op": "permute", "args": ["wf"], "attrs": {"dims": [1, 0]}},
                  {"name": "mm", "op": "matmul", "args": ["xf", "wt"], "attrs": {"storage_dtype": "DT"}},
                  {"name": "y", "op": "add", "args": ["mm", "bf"]},
                  {"name": "r", "op": "relu", "args": ["y"]},
                  {"name": "out", "op": "cast", "args": ["r"], "attrs": {"dtype": "DT"}}],
        "outputs": ["out"]})", dtype);
}

std::vector<SampleGraph> half_library_graphs(const std::string& dtype) {
  return {
      {"linear_relu", half_linear(dtype, 96)},
      {"attention", in_dtype(R"({"inputs": [{"name": "q", "shape": [2, 3, 40, 16], "dtype": "DT"},
                   {"name": "k", "shape": [2, 3, 48, 16], "dtype": "DT"}, {"name": "v", "shape": [2, 3, 48, 24], "dtype": "DT"}],
        "nodes": [{"name": "qf", "op": "cast", "args": ["q"], "attrs": {"dtype": "f32"}},
                  {"name": "kf", "op": "cast", "args": ["k"], "attrs": {"dtype": "f32"}},
                  {"name": "vf", "op": "cast", "args": ["v"], "attrs": {"dtype": "f32"}},
                  {"name": "kt", "op": "permute", "args": ["kf"], "attrs": {"dims": [0, 1, 3, 2]}},
                  {"name": "s", "op": "matmul", "args": ["qf", "kt"], "attrs": {"storage_dtype": "DT"}},
                  {"name": "c", "op": "const", "attrs": {"value": 0.25}},
                  {"name": "scaled", "op": "mul", "args": ["s", "c"]},
                  {"name": "p", "op": "softmax", "args": ["scaled"], "attrs": {"dim": 3}},
                  {"name": "o", "op": "matmul", "args": ["p", "vf"], "attrs": {"storage_dtype": "DT"}},
                  {"name": "out", "op": "cast", "args": ["o"], "attrs": {"dtype": "DT"}}],
        "outputs": ["out"]})", dtype)},
      {"mlp_erf_gelu", in_dtype(R"({"inputs": [{"name": "x", "shape": [16, 64], "dtype": "DT"}],
        "params": [{"name": "w1", "shape": [64, 128], "dtype": "DT"}, {"name": "b1", "shape": [128], "dtype": "DT"},
                   {"name": "w2", "shape": [128, 32], "dtype": "DT"}, {"name": "b2", "shape": [32], "dtype": "DT"}],
        "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
                  {"name": "w1f", "op": "cast", "args": ["w1"], "attrs": {"dtype": "f32"}},
                  {"name": "b1f", "op": "cast", "args": ["b1"], "attrs": {"dtype": "f32"}},
                  {"name": "w2f", "op": "cast", "args": ["w2"], "attrs": {"dtype": "f32"}},
                  {"name": "b2f", "op": "cast", "args": ["b2"], "attrs": {"dtype": "f32"}},
                  {"name": "m1", "op": "matmul", "args": ["xf", "w1f"], "attrs": {"storage_dtype": "DT"}},
                  {"name": "h", "op": "add", "args": ["m1", "b1f"]},
                  {"name": "g", "op": "gelu", "args": ["h"], "attrs": {"approximate": "none"}},
                  {"name": "m2", "op": "matmul", "args": ["g", "w2f"], "attrs": {"storage_dtype": "DT"}},
                  {"name": "y", "op": "add", "args": ["m2", "b2f"]},
                  {"name": "out", "op": "cast", "args": ["y"], "attrs": {"dtype": "DT"}}],
        "outputs": ["out"]})", dtype)},
      {"conv_scale_conv", in_dtype(R"({"inputs": [{"name": "x", "shape": [2, 8, 10, 12], "dtype": "DT"}],
        "params": [{"name": "w1", "shape": [16, 8, 3, 3], "dtype": "DT"}, {"name": "w2", "shape": [16, 16, 3, 3], "dtype": "DT"}],
        "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
                  {"name": "w1f", "op": "cast", "args": ["w1"], "attrs": {"dtype": "f32"}},
                  {"name": "w2f", "op": "cast", "args": ["w2"], "attrs": {"dtype": "f32"}},
                  {"name": "c1", "op": "conv", "args": ["xf", "w1f"], "attrs": {"padding": [1, 1], "storage_dtype": "DT"}},
                  {"name": "half", "op": "const", "attrs": {"value": 0.5}},
                  {"name": "t", "op": "tanh", "args": ["c1"]},
                  {"name": "u", "op": "mul", "args": ["t", "half"]},
                  {"name": "a", "op": "add", "args": ["u", "c1"]},
                  {"name": "c2", "op": "conv", "args": ["a", "w2f"], "attrs": {"padding": [1, 1], "storage_dtype": "DT"}},
                  {"name": "out", "op": "cast", "args": ["c2"], "attrs": {"dtype": "DT"}}],
        "outputs": ["out"]})", dtype)},
  };
}

}  // namespace kforge::testing
