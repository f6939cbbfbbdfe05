// matmul in the IR: torch.matmul's shape rules and their errors, JSON round trips, the canonical form
// decompose produces, and the interpreter against a direct reading of torch.matmul's definition.
// (tests/python's op cases hold the interpreter to PyTorch itself on the same forms.)
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <random>

#include "common/matmul_graphs.h"
#include "common/graph_errors.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/error.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

using nlohmann::json;

json product(Shape a, Shape b, const std::string& dtype = "f32") {
  return {{"inputs", {{{"name", "a"}, {"shape", a}, {"dtype", dtype}}, {{"name", "b"}, {"shape", b}, {"dtype", dtype}}}},
          {"nodes", {{{"name", "y"}, {"op", "matmul"}, {"args", {"a", "b"}}}}},
          {"outputs", {"y"}}};
}

using testing::expect_graph_error;

TEST(MatmulShape, FollowsTorchMatmul) {
  auto shape = [](Shape a, Shape b) { return graph_from_json(product(a, b)).nodes.back().type.shape; };
  EXPECT_EQ(shape({5, 7}, {7, 3}), (Shape{5, 3}));
  EXPECT_EQ(shape({7}, {7}), (Shape{}));
  EXPECT_EQ(shape({5, 7}, {7}), (Shape{5}));
  EXPECT_EQ(shape({7}, {2, 7, 3}), (Shape{2, 3}));
  EXPECT_EQ(shape({2, 1, 5, 7}, {3, 7, 4}), (Shape{2, 3, 5, 4}));
}

TEST(MatmulShape, BadOperandsNameTheCause) {
  expect_graph_error(product({5, 7}, {6, 3}), "node 'y': matmul of [5, 7] and [6, 3]: inner dims differ (a has 7 columns, b has 6 rows)");
  expect_graph_error(product({}, {6, 3}), "need at least 1 dim");
  expect_graph_error(product({2, 5, 7}, {3, 7, 4}), "batch dims do not broadcast");
  expect_graph_error(product({5, 7}, {7, 3}, "i64"), "node 'y' (op matmul): operand a must be f32, got i64");
  json g = product({5, 7}, {7, 3});
  g["nodes"][0]["attrs"] = {{"epilogue", "bias_swish"}};
  expect_graph_error(g, "unknown matmul epilogue 'bias_swish'");
  g["nodes"][0]["attrs"] = {{"epilogue", "bias"}};
  expect_graph_error(g, "epilogue bias and the argument count disagree");
  g["inputs"].push_back({{"name", "c"}, {"shape", {5}}});
  g["nodes"][0]["args"] = {"a", "b", "c"};
  expect_graph_error(g, "bias [5] must hold one value per result column (3)");
}

TEST(MatmulJson, FusedNodeRoundTrips) {
  json g = product({5, 7}, {7, 3});
  g["inputs"].push_back({{"name", "c"}, {"shape", {1, 3}}});
  g["nodes"][0]["args"] = {"a", "b", "c"};
  g["nodes"][0]["attrs"] = {{"epilogue", "bias_gelu"}};
  Graph back = graph_from_json(graph_to_json(graph_from_json(g)));
  EXPECT_EQ(back.nodes.back().attrs.at("epilogue"), "bias_gelu");
  EXPECT_EQ(back.nodes.back().args.size(), 3u);
  EXPECT_EQ(back.nodes.back().type.shape, (Shape{5, 3}));
}

std::vector<const Node*> matmuls(const Graph& g) {
  std::vector<const Node*> out;
  for (auto& n : g.nodes)
    if (n.op == "matmul") out.push_back(&n);
  return out;
}

TEST(MatmulDecompose, CanonicalForms) {
  // A batch of matrices times one matrix is one taller product.
  Graph p = decompose(graph_from_json(product({4, 9, 31}, {31, 15})));
  ASSERT_EQ(matmuls(p).size(), 1u);
  EXPECT_EQ(p.at(matmuls(p)[0]->args[0]).type.shape, (Shape{36, 31}));
  // A vector on the left becomes a one-row matrix; the result is reshaped back.
  p = decompose(graph_from_json(product({29}, {29, 13})));
  EXPECT_EQ(p.at(matmuls(p)[0]->args[0]).type.shape, (Shape{1, 29}));
  EXPECT_EQ(p.at(p.outputs[0]).type.shape, (Shape{13}));
  // One output column (a matrix times a vector, or a [K, 1] matrix, batched or not): a sum over K of the
  // product of a and b's column as a row, no library product; the result reshaped back.
  for (auto [a, b, out] : std::vector<std::tuple<Shape, Shape, Shape>>{
           {{37, 29}, {29}, {37}}, {{37, 29}, {29, 1}, {37, 1}}, {{3, 37, 29}, {3, 29, 1}, {3, 37, 1}}, {{29}, {29}, {}}}) {
    p = decompose(graph_from_json(product(a, b)));
    EXPECT_TRUE(matmuls(p).empty()) << to_string(a) << " @ " << to_string(b);
    EXPECT_EQ(std::count_if(p.nodes.begin(), p.nodes.end(), [](const Node& n) { return n.op == "reduce"; }), 1);
    EXPECT_EQ(p.at(p.outputs[0]).type.shape, out);
  }
  // Batch dims that only one stride per operand cannot describe: that operand is expanded.
  p = decompose(graph_from_json(product({2, 1, 9, 13}, {3, 13, 5})));
  const Node* mm = matmuls(p)[0];
  EXPECT_EQ(p.at(mm->args[0]).op, "expand");
  EXPECT_EQ(p.at(mm->args[0]).type.shape, (Shape{2, 3, 9, 13}));
  EXPECT_EQ(p.at(mm->args[1]).op, "expand");
  // Equal batch dims: nothing added, and the node keeps its name (the schedule's key).
  p = decompose(graph_from_json(product({3, 5, 7}, {3, 7, 4})));
  EXPECT_EQ(p.nodes.size(), 3u);
  EXPECT_EQ(p.nodes.back().name, "y");
}

// torch.matmul read literally: promote vectors, broadcast batch dims, sum over k, drop promoted dims.
HostTensor literal_matmul(HostTensor a, HostTensor b, const Shape& result) {
  bool av = a.type.shape.size() == 1, bv = b.type.shape.size() == 1;
  if (av) a.type.shape.insert(a.type.shape.begin(), 1);
  if (bv) b.type.shape.push_back(1);
  while (a.type.shape.size() < b.type.shape.size()) a.type.shape.insert(a.type.shape.begin(), 1);
  while (b.type.shape.size() < a.type.shape.size()) b.type.shape.insert(b.type.shape.begin(), 1);
  size_t r = a.type.shape.size();
  int64_t m = a.type.shape[r - 2], k = a.type.shape[r - 1], n = b.type.shape[r - 1];
  Shape batch(r - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max(a.type.shape[i], b.type.shape[i]);
  HostTensor out{{DType::f32, result}, {}};
  std::vector<int64_t> c(batch.size(), 0);
  for (int64_t bi = 0; bi < numel(batch); ++bi) {
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      oa = oa * a.type.shape[i] + (a.type.shape[i] == 1 ? 0 : c[i]);
      ob = ob * b.type.shape[i] + (b.type.shape[i] == 1 ? 0 : c[i]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += a.data[(oa * m + i) * k + q] * b.data[(ob * k + q) * n + j];
        out.data.push_back(s);
      }
    for (int i = int(c.size()) - 1; i >= 0 && ++c[i] == batch[i]; --i) c[i] = 0;
  }
  return out;
}

TEST(MatmulInterpreter, MatchesTorchMatmulsDefinition) {
  std::mt19937_64 rng(7);
  for (auto [a, b] : std::vector<std::pair<Shape, Shape>>{{{5, 7}, {7, 3}}, {{7}, {7}}, {{5, 7}, {7}}, {{7}, {7, 3}},
                                                          {{3, 5, 7}, {3, 7, 4}}, {{2, 3, 5, 7}, {7, 4}},
                                                          {{5, 7}, {2, 7, 4}}, {{2, 1, 5, 7}, {3, 7, 4}}, {{7}, {2, 7, 3}},
                                                          // one output column: matrix_vector's row sums, with
                                                          // broadcast batches and a vector times a batch
                                                          {{5, 7}, {3, 7, 1}}, {{2, 1, 5, 7}, {3, 7, 1}},
                                                          {{3, 5, 7}, {7, 1}}, {{7}, {2, 7, 1}}, {{1, 7}, {7}}}) {
    Graph g = graph_from_json(product(a, b));
    auto in = testing::random_values(g, g.inputs, rng);
    auto got = interpret(decompose(g), in, {});
    auto want = literal_matmul(in[0], in[1], g.at(g.outputs[0]).type.shape);
    ASSERT_EQ(got[0].type.shape, want.type.shape) << to_string(a) << " @ " << to_string(b);
    for (size_t i = 0; i < want.data.size(); ++i)
      ASSERT_NEAR(got[0].data[i], want.data[i], 1e-12) << to_string(a) << " @ " << to_string(b) << " element " << i;
  }
}

TEST(MatmulInterpreter, HandComputed) {
  auto t = [](Shape s, std::vector<double> v) { return HostTensor{{DType::f32, std::move(s)}, std::move(v)}; };
  auto out = interpret(decompose(graph_from_json(product({2, 3}, {3, 2}))),
                       {t({2, 3}, {1, 2, 3, 4, 5, 6}), t({3, 2}, {7, 8, 9, 10, 11, 12})}, {});
  EXPECT_EQ(out[0].data, (std::vector<double>{58, 64, 139, 154}));
  // Epilogue bias + relu: [1, -1] @ I + [0.5, 0.25] -> relu -> [1.5, 0]
  json g = product({1, 2}, {2, 2});
  g["inputs"].push_back({{"name", "c"}, {"shape", {2}}});
  g["nodes"][0]["args"] = {"a", "b", "c"};
  g["nodes"][0]["attrs"] = {{"epilogue", "bias_relu"}};
  out = interpret(graph_from_json(g), {t({1, 2}, {1, -1}), t({2, 2}, {1, 0, 0, 1}), t({2}, {0.5, 0.25})}, {});
  EXPECT_EQ(out[0].data, (std::vector<double>{1.5, 0}));
}

// A one-column product decomposes to a row sum (decompose.cpp: matrix_vector) only with no activation epilogue:
// one given bias_relu in JSON keeps the matmul, which applies it (the review's case: [3.5, -2.5] without relu).
TEST(MatmulDecompose, AOneColumnProductWithAnActivationEpilogueKeepsIt) {
  auto t = [](Shape s, std::vector<double> v) { return HostTensor{{DType::f32, std::move(s)}, std::move(v)}; };
  const std::vector<HostTensor> in = {t({2, 3}, {1, 1, 1, -1, -1, -1}), t({3, 1}, {1, 1, 1}), t({1}, {0.5})};
  for (const char* epilogue : {"bias", "bias_relu"}) {
    json g = product({2, 3}, {3, 1});
    g["inputs"].push_back({{"name", "c"}, {"shape", {1}}});
    g["nodes"][0]["args"] = {"a", "b", "c"};
    g["nodes"][0]["attrs"] = {{"epilogue", epilogue}};
    const Graph d = decompose(graph_from_json(g));
    const bool product_kept = std::any_of(d.nodes.begin(), d.nodes.end(), [](const Node& n) { return n.op == "matmul"; });
    EXPECT_EQ(product_kept, std::string(epilogue) == "bias_relu") << epilogue;
    const std::vector<double> want = std::string(epilogue) == "bias" ? std::vector<double>{3.5, -2.5} : std::vector<double>{3.5, 0};
    EXPECT_EQ(interpret(d, in, {})[0].data, want) << epilogue;
  }
}

TEST(MatmulInterpreter, RefusesAVectorOperandBeforeDecompose) {
  Graph g = graph_from_json(product({5, 7}, {7}));
  auto t = [](Shape s) { return HostTensor{{DType::f32, s}, std::vector<double>(numel(s))}; };
  EXPECT_THROW(interpret(g, {t({5, 7}), t({7})}, {}), UserError);
}

TEST(MatmulGraphs, EverySampleChecksAndDecomposes) {
  for (auto& s : testing::matmul_graphs()) {
    Graph g = graph_from_json(s.graph);
    Graph p = decompose(g);
    EXPECT_EQ(p.at(p.outputs[0]).type, g.at(g.outputs[0]).type) << s.name;
  }
}

}  // namespace
}  // namespace kforge
