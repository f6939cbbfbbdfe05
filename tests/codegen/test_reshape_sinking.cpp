// Reshape sinking (codegen/reshape_sinking.h): elementwise ops after a reshape of a computed value move before
// it and join the kernel computing that value (GroupNorm then tanh: one row kernel, where a second kernel read
// the norm's output again), computing the same function; ops that are not elementwise over one value each, or
// a reshape others read too, stay where they are.
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "codegen/partition.h"
#include "codegen/reshape_sinking.h"
#include "common/graph_json.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

using nlohmann::json;

using testing::node;
using testing::value;

// x [4, 8, 5, 6] through GroupNorm (4 groups, affine), then `tail` nodes reading "gn".
Graph group_norm_then(const json& tail, const std::string& output, const json& extra_inputs = json::array()) {
  json inputs = {value("x", {4, 8, 5, 6})};
  for (auto& i : extra_inputs) inputs.push_back(i);
  json nodes = {node("gn", "group_norm", {"x", "w", "b"}, {{"groups", 4}, {"eps", 1e-5}})};
  for (auto& n : tail) nodes.push_back(n);
  return graph_from_json({{"inputs", inputs}, {"params", {value("w", {8}), value("b", {8})}}, {"nodes", nodes}, {"outputs", {output}}});
}

// The sunk graph computes what the decomposed one does, on random inputs.
void expect_same_function(const Graph& g) {
  std::mt19937_64 rng(9);
  auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
  const Graph d = decompose(g);
  const auto want = interpret(d, inputs, params), got = interpret(sink_reshapes(d), inputs, params);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].type, want[o].type);
    for (size_t i = 0; i < want[o].data.size(); ++i) ASSERT_EQ(got[o].data[i], want[o].data[i]) << "output " << o << " element " << i;
  }
}

TEST(ReshapeSinking, ElementwiseOpsAfterAGroupNormJoinItsRowKernel) {
  // tanh, then a scale by a one-value tensor and a clamp: all three sink into the norm's [N, G, C/G, H, W] view.
  Graph g = group_norm_then({node("t", "tanh", {"gn"}), node("s", "mul", {"t", "k"}), node("y", "clamp", {"s"}, {{"min", -0.5}, {"max", 0.5}})},
                            "y", json::array({value("k", {1, 1})}));
  expect_same_function(g);
  const Graph prim = primitive_graph(g);
  const Node& out = prim.at(prim.outputs[0]);
  EXPECT_EQ(out.op, "reshape") << "the output is the reshape of the sunk chain";
  EXPECT_EQ(out.name, "y") << "under the graph's own output name";
  const std::vector<KernelGroup> groups = kernel_groups(g, true);
  ASSERT_EQ(groups.size(), 1u) << "norm, affine, tanh, scale and clamp in one row kernel";
  EXPECT_EQ(groups[0].kind, GroupKind::row);
  // Without the sinking the chain after the reshape was a pointwise kernel of its own.
  EXPECT_EQ(partition(decompose(g), true).groups.size(), 2u);
}

TEST(ReshapeSinking, WhatCannotMoveStays) {
  // The reshape read twice (the norm's output is also a graph output), an operand that is not one value (a
  // per-channel add), a position-dependent op (triangle): nothing moves, and two kernels remain.
  for (const auto& [tail, outputs] : std::vector<std::pair<json, std::vector<std::string>>>{
           {json::array({node("y", "tanh", {"gn"})}), {"y", "gn"}},
           {json::array({node("y", "add", {"gn", "z"})}), {"y"}},
           {json::array({node("y", "triangle", {"gn"}, {{"upper", true}, {"diagonal", 0}})}), {"y"}}}) {
    json inputs = {value("x", {4, 8, 5, 6}), value("z", {4, 8, 5, 6})};
    json nodes = {node("gn", "group_norm", {"x", "w", "b"}, {{"groups", 4}, {"eps", 1e-5}})};
    for (auto& n : tail) nodes.push_back(n);
    Graph g = graph_from_json({{"inputs", inputs}, {"params", {value("w", {8}), value("b", {8})}}, {"nodes", nodes}, {"outputs", outputs}});
    const Graph d = decompose(g), sunk = sink_reshapes(d);
    ASSERT_EQ(sunk.nodes.size(), d.nodes.size());
    for (size_t i = 0; i < d.nodes.size(); ++i) EXPECT_EQ(sunk.nodes[i].op, d.nodes[i].op) << tail.dump();
    EXPECT_GE(kernel_groups(g, true).size(), 2u) << tail.dump();
    expect_same_function(g);
  }
}

// A Python scalar arrives as a const node written just before its use, after the reshape: it moves before the
// reshape (the graph renumbered, still topological) and the scale sinks with the tanh; also with the reshape as
// the second operand (0.5 - view) and a comparison (bool result).
TEST(ReshapeSinking, AScalarConstantWrittenAfterTheReshapeMovesWithTheOp) {
  const json half = node("c", "const", {}, {{"value", 0.5}, {"dtype", "f32"}});
  for (const json& tail : {json::array({node("t", "tanh", {"gn"}), half, node("y", "mul", {"t", "c"})}),
                           json::array({half, node("y", "sub", {"c", "gn"})}),
                           json::array({half, node("y", "gt", {"gn", "c"})})}) {
    Graph g = group_norm_then(tail, "y");
    expect_same_function(g);
    EXPECT_EQ(kernel_groups(g, true).size(), 1u) << tail.dump();
    const Graph sunk = sink_reshapes(decompose(g));
    for (size_t i = 0; i < sunk.nodes.size(); ++i)
      for (int a : sunk.nodes[i].args) EXPECT_LT(a, int(i)) << tail.dump() << ": node " << sunk.nodes[i].name;
    EXPECT_EQ(sunk.at(sunk.outputs[0]).name, "y");
  }
}

// A one-value operand of higher rank than the view widens the op's result ([1, 4, 8, 5, 6] from a [4, 8, 5, 6]
// view times k [1, 1, 1, 1, 1]); the sunk reshape's shape attribute says so too, so that the graph written as JSON
// and read back (--dump-ir) keeps the output's type.
TEST(ReshapeSinking, AWideningOperandKeepsTheViewsShapeAttribute) {
  Graph g = group_norm_then(json::array({node("y", "mul", {"gn", "k"})}), "y", json::array({value("k", {1, 1, 1, 1, 1})}));
  expect_same_function(g);
  const Graph sunk = sink_reshapes(decompose(g));
  const Node& out = sunk.at(sunk.outputs[0]);
  ASSERT_EQ(out.op, "reshape");
  EXPECT_EQ(out.type.shape, (Shape{1, 4, 8, 5, 6}));
  EXPECT_EQ(out.attrs.at("shape").get<Shape>(), out.type.shape);
  const Graph again = graph_from_json(graph_to_json(sunk));
  EXPECT_EQ(again.at(again.outputs[0]).type, out.type);
}

// A Linear on a 3-D input is a 2-D product reshaped back: its bias (one value a column) varies along the trailing
// dim the reshape keeps, so the add sinks before the reshape and folds into the product's epilogue (one library
// step, no kernel for the bias); an operand varying along a dim the reshape changes ([T, N] against [B T, N]) stays,
// as does one of higher rank than the 2-D product ([1, 1, N]: the add would widen it).
TEST(ReshapeSinking, ALinearsBiasOnA3DInputFoldsIntoItsProduct) {
  for (const auto& [bias, folds] : std::vector<std::pair<Shape, bool>>{{{12}, true}, {{1, 1, 12}, false}, {{7, 12}, false}}) {
    Graph g = graph_from_json({{"inputs", {value("x", {6, 7, 16})}},
                               {"params", {value("w", {12, 16}), value("b", bias)}},
                               {"nodes", {node("wt", "permute", {"w"}, {{"dims", {1, 0}}}), node("mm", "matmul", {"x", "wt"}),
                                          node("y", "add", {"mm", "b"})}},
                               {"outputs", {"y"}}});
    expect_same_function(g);
    int with_bias = 0;
    for (const Node& n : primitive_graph(g).nodes) with_bias += n.op == "matmul" && n.attrs.value("epilogue", "none") == "bias";
    EXPECT_EQ(with_bias, folds ? 1 : 0) << to_string(bias);
    EXPECT_EQ(lower(g, {}).kernels.size(), folds ? 1u : 2u) << to_string(bias);
  }
}

}  // namespace
}  // namespace kforge
