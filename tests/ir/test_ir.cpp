#include <gtest/gtest.h>

#include <cmath>

#include "common/graph_errors.h"
#include "common/random_inputs.h"
#include "common/sample_graphs.h"
#include "ir/decompose.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/pool.h"

namespace kforge {
namespace {

using nlohmann::json;

TEST(GraphJson, EverySampleRoundTrips) {
  for (auto& s : testing::sample_graphs()) {
    Graph g = graph_from_json(s.graph);
    Graph back = graph_from_json(graph_to_json(g));
    ASSERT_EQ(g.nodes.size(), back.nodes.size()) << s.name;
    for (size_t i = 0; i < g.nodes.size(); ++i) EXPECT_EQ(g.nodes[i].type, back.nodes[i].type) << s.name << " node " << i;
  }
}

TEST(GraphJson, DecompositionKeepsOutputTypes) {
  for (auto& s : testing::sample_graphs()) {
    Graph g = graph_from_json(s.graph);
    Graph p = decompose(g);
    ASSERT_EQ(p.outputs.size(), g.outputs.size());
    for (size_t i = 0; i < g.outputs.size(); ++i) EXPECT_EQ(p.at(p.outputs[i]).type, g.at(g.outputs[i]).type) << s.name;
  }
}

using testing::expect_graph_error;

TEST(ShapeRules, BadGraphsNameTheCause) {
  json x = {{"name", "x"}, {"shape", {4, 5}}};
  json y = {{"name", "y"}, {"shape", {3, 5}}};
  expect_graph_error({{"inputs", {x, y}}, {"nodes", {{{"name", "s"}, {"op", "add"}, {"args", {"x", "y"}}}}}, {"outputs", {"s"}}},
               "node 's' (op add): shapes [4, 5] and [3, 5] do not broadcast");
  expect_graph_error({{"inputs", {x}}, {"nodes", {{{"name", "f"}, {"op", "fft"}, {"args", {"x"}}}}}, {"outputs", {"f"}}}, "unknown op");
  expect_graph_error({{"inputs", {x}}, {"nodes", {{{"name", "r"}, {"op", "relu"}, {"args", {"z"}}}}}, {"outputs", {"r"}}},
               "uses 'z', which is not defined before it");
  expect_graph_error({{"inputs", {x}}, {"nodes", {{{"name", "s"}, {"op", "sum"}, {"args", {"x"}}, {"attrs", {{"dims", {2}}, {"keepdim", false}}}}}},
                {"outputs", {"s"}}}, "dim 2 is out of range for rank 2");
  expect_graph_error({{"inputs", {x}}, {"nodes", json::array()}, {"outputs", json::array()}}, "graph has no outputs");
  expect_graph_error({{"inputs", {x, x}}, {"outputs", {"x"}}}, "defined twice");
}

HostTensor tensor(Shape s, std::vector<double> v) { return {{DType::f32, std::move(s)}, std::move(v)}; }

std::vector<HostTensor> run(const json& graph, std::vector<HostTensor> in, std::vector<HostTensor> params = {}) {
  return interpret(decompose(graph_from_json(graph)), in, params);
}

json one_op(const std::string& op, Shape shape, json attrs) {
  return {{"inputs", {{{"name", "x"}, {"shape", shape}}}},
          {"nodes", {{{"name", "y"}, {"op", op}, {"args", {"x"}}, {"attrs", attrs}}}},
          {"outputs", {"y"}}};
}

TEST(Interpreter, SoftmaxRowsSumToOne) {
  auto out = run(one_op("softmax", {2, 3}, {{"dim", 1}}), {tensor({2, 3}, {1, 2, 3, -1, 0, 5})});
  EXPECT_NEAR(out[0].data[0] + out[0].data[1] + out[0].data[2], 1.0, 1e-12);
  EXPECT_NEAR(out[0].data[2], std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-12);
}

TEST(Interpreter, ArgmaxTakesTheFirstOfEqualMaxima) {
  auto out = run(one_op("argmax", {1, 4}, {{"dim", 1}, {"keepdim", false}}), {tensor({1, 4}, {1, 7, 7, 2})});
  EXPECT_EQ(out[0].type.dtype, DType::i64);
  EXPECT_EQ(out[0].data[0], 1);
}

TEST(Interpreter, ReverseAndExclusiveScans) {
  auto rev = run(one_op("cumsum", {1, 4}, {{"dim", 1}, {"reverse", true}}), {tensor({1, 4}, {1, 2, 3, 4})});
  EXPECT_EQ(rev[0].data, (std::vector<double>{10, 9, 7, 4}));
}

TEST(Interpreter, AvgPoolDividesByTheWindowClippedToThePaddedInput) {
  // 1D, length 3, kernel 2, stride 2, padding 1: windows [-1, 0] and [1, 2].
  json a = {{"nd", 1}, {"kernel", {2}}, {"stride", {2}}, {"padding", {1}}, {"count_include_pad", true}};
  auto out = run(one_op("avg_pool", {1, 1, 3}, a), {tensor({1, 1, 3}, {2, 4, 6})});
  EXPECT_EQ(out[0].data, (std::vector<double>{1, 5}));
  a["count_include_pad"] = false;
  out = run(one_op("avg_pool", {1, 1, 3}, a), {tensor({1, 1, 3}, {2, 4, 6})});
  EXPECT_EQ(out[0].data, (std::vector<double>{2, 5}));
}

// Each padding mode's positions on a row of 4 (two before, one after): mirrored without the edge, the edge
// repeated, wrapped, or the fill; and counts the mode cannot give are refused naming the limit.
TEST(Interpreter, PaddingModesReadTheirPositions) {
  const auto padded = [](const std::string& mode) {
    json a = {{"pads", {0, 0, 2, 1}}, {"mode", mode}, {"value", 9}};
    return run(one_op("pad", {1, 4}, a), {tensor({1, 4}, {1, 2, 3, 4})})[0].data;
  };
  EXPECT_EQ(padded("reflect"), (std::vector<double>{3, 2, 1, 2, 3, 4, 3}));
  EXPECT_EQ(padded("replicate"), (std::vector<double>{1, 1, 1, 2, 3, 4, 4}));
  EXPECT_EQ(padded("circular"), (std::vector<double>{3, 4, 1, 2, 3, 4, 1}));
  EXPECT_EQ(padded("constant"), (std::vector<double>{9, 9, 1, 2, 3, 4, 9}));
  expect_graph_error(one_op("pad", {1, 4}, {{"pads", {0, 0, 4, 0}}, {"mode", "reflect"}}),
                     "reflect padding of 4 on a dim of 4 (at most 3)");
  expect_graph_error(one_op("pad", {1, 4}, {{"pads", {1, 1}}, {"mode", "constant"}}), "pads has 2 counts for 2 dims");
  expect_graph_error(one_op("pad", {1, 4}, {{"pads", {0, 0, 1, 1}}, {"mode", "mirror"}}), "unknown padding mode 'mirror'");
}

// ceil_mode rounds the output size up (PyTorch's rule: a last window starting in the right padding is dropped);
// its last window, clipped by the input, divides by what it holds.
TEST(Interpreter, CeilModeKeepsTheLastPartialWindow) {
  json a = {{"nd", 1}, {"kernel", {2}}, {"stride", {2}}, {"padding", {0}}, {"count_include_pad", true}, {"ceil_mode", true}};
  auto out = run(one_op("avg_pool", {1, 1, 5}, a), {tensor({1, 1, 5}, {1, 2, 3, 4, 5})});
  EXPECT_EQ(out[0].data, (std::vector<double>{1.5, 3.5, 5}));
  a["ceil_mode"] = false;
  EXPECT_EQ(run(one_op("avg_pool", {1, 1, 5}, a), {tensor({1, 1, 5}, {1, 2, 3, 4, 5})})[0].data, (std::vector<double>{1.5, 3.5}));
  // Length 7, kernel 2, stride 2, padding 1: rounding up gives 5 windows, but the 5th would start at 4 * 2 - 1 = 7,
  // in the right padding, so 4 remain, as without ceil_mode.
  EXPECT_EQ(pooled_size(7, 2, 2, 1, 1, true), 4);
  EXPECT_EQ(pooled_size(6, 3, 2, 1, 1, true), 4);
  EXPECT_EQ(pooled_size(6, 3, 2, 1, 1, false), 3);
  EXPECT_EQ(pooled_size(10, 3, 2, 0, 1, true), 5);
  EXPECT_EQ(pooled_size(10, 3, 2, 0, 1, false), 4);
  json m = {{"nd", 1}, {"kernel", {3}}, {"stride", {2}}, {"padding", {0}}, {"ceil_mode", true}};
  out = run(one_op("max_pool", {1, 1, 6}, m), {tensor({1, 1, 6}, {1, 9, 2, 3, 8, 7})});
  EXPECT_EQ(out[0].data, (std::vector<double>{9, 8, 8}));  // windows [0, 3), [2, 5), [4, 6)
  json p = {{"nd", 1}, {"kernel", {2}}, {"stride", {2}}, {"padding", {1}}, {"count_include_pad", true}, {"ceil_mode", true}};
  out = run(one_op("avg_pool", {1, 1, 7}, p), {tensor({1, 1, 7}, {1, 2, 3, 4, 5, 6, 7})});
  EXPECT_EQ(out[0].data, (std::vector<double>{0.5, 2.5, 4.5, 6.5}));  // values of torch's avg_pool1d
}

// Adaptive pooling's windows of unequal widths: output i of n into m spans [floor(i n / m), ceil((i + 1) n / m)).
TEST(Interpreter, AdaptivePoolingWindowsOfUnequalWidths) {
  json a = {{"nd", 1}, {"adaptive", true}, {"output", {3}}};
  auto out = run(one_op("avg_pool", {1, 1, 5}, a), {tensor({1, 1, 5}, {1, 2, 3, 4, 5})});
  EXPECT_EQ(out[0].type.shape, (Shape{1, 1, 3}));
  EXPECT_EQ(out[0].data, (std::vector<double>{1.5, 3, 4.5}));  // [0, 2), [1, 4), [3, 5)
  out = run(one_op("max_pool", {1, 1, 5}, a), {tensor({1, 1, 5}, {5, 1, 2, 4, 3})});
  EXPECT_EQ(out[0].data, (std::vector<double>{5, 4, 4}));
  std::vector<PoolDim> d = pool_dims(a, {1, 1, 5}, "test");
  EXPECT_EQ(d[0].kernel, 3);  // the widest window
  a["output"] = {6};
  EXPECT_THROW(graph_from_json(one_op("avg_pool", {1, 1, 5}, a)), UserError);  // more outputs than inputs
}

// Global pooling (one window over every spatial dim) decomposes to a reduction, with the pooling's values; a window
// short of the whole dim, or padded, stays a pooling.
TEST(Decompose, GlobalPoolingIsAReductionOverTheSpatialDims) {
  std::vector<double> x(2 * 3 * 4 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(double(i));
  for (const char* op : {"avg_pool", "max_pool"}) {
    json a = {{"nd", 2}, {"kernel", {4, 5}}, {"stride", {4, 5}}, {"padding", {0, 0}}, {"count_include_pad", true},
              {"dilation", {1, 1}}};
    Graph g = graph_from_json(one_op(op, {2, 3, 4, 5}, a));
    Graph p = decompose(g);
    bool pools = false, reduces = false;
    for (const Node& n : p.nodes) pools |= n.op == "pool", reduces |= n.op == "reduce";
    EXPECT_TRUE(reduces && !pools) << op;
    auto out = interpret(p, {tensor({2, 3, 4, 5}, x)}, {});
    ASSERT_EQ(out[0].type.shape, (Shape{2, 3, 1, 1})) << op;
    for (int c = 0; c < 6; ++c) {
      double sum = 0, top = -1e300;
      for (int k = 0; k < 20; ++k) sum += x[size_t(c * 20 + k)], top = std::max(top, x[size_t(c * 20 + k)]);
      EXPECT_NEAR(out[0].data[size_t(c)], std::string(op) == "avg_pool" ? sum / 20 : top, 1e-12) << op << " " << c;
    }
    a["kernel"] = {4, 4};
    bool still_pools = false;
    for (const Node& n : decompose(graph_from_json(one_op(op, {2, 3, 4, 5}, a))).nodes) still_pools |= n.op == "pool";
    EXPECT_TRUE(still_pools) << op;
    a["kernel"] = {4, 5};
    a["padding"] = {1, 0};
    still_pools = false;
    for (const Node& n : decompose(graph_from_json(one_op(op, {2, 3, 4, 5}, a))).nodes) still_pools |= n.op == "pool";
    EXPECT_TRUE(still_pools) << op;
  }
}

TEST(Interpreter, BatchNormUsesBatchStatistics) {
  json g = {{"inputs", {{{"name", "x"}, {"shape", {2, 1, 2}}}}},
            {"nodes", {{{"name", "y"}, {"op", "batch_norm"}, {"args", {"x", "", ""}}, {"attrs", {{"eps", 0.0}}}}}},
            {"outputs", {"y"}}};
  auto out = run(g, {tensor({2, 1, 2}, {1, 2, 3, 4})});  // mean 2.5, biased var 1.25
  EXPECT_NEAR(out[0].data[0], (1 - 2.5) / std::sqrt(1.25), 1e-12);
}

TEST(Interpreter, RejectsHighLevelOpsAndWrongInputCounts) {
  Graph g = graph_from_json(one_op("softmax", {2, 3}, {{"dim", 1}}));
  EXPECT_THROW(interpret(g, {tensor({2, 3}, std::vector<double>(6))}, {}), UserError);
  EXPECT_THROW(interpret(decompose(g), {}, {}), UserError);
}

}  // namespace
}  // namespace kforge
