// Slices of an elementwise value taken of its operands (codegen/slice_hoisting.h): an LSTM-like step whose gates are
// slices of the input projection's row plus the recurrent product needs no kernel storing the sum, broadcast
// operands are read as they are, and the graph computes the same function bit for bit.
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "codegen/slice_hoisting.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

// gates = xr + h @ w (xr the step's rows of a stored projection), each gate a slice of it, and two more gates sliced out of
// h @ w times a per-column scale and plus a per-row shift (operands broadcast along the sliced dim), combined.
Graph gated_step() {
  return graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "xproj", "shape": [12, 32]},
      {"name": "h", "shape": [4, 16]}, {"name": "shift", "shape": [4, 1]}],
    "params": [{"name": "w", "shape": [16, 32]}, {"name": "scale", "shape": [32]}],
    "nodes": [{"name": "xr", "op": "slice", "args": ["xproj"], "attrs": {"dim": 0, "start": 4, "end": 8, "step": 1}},
              {"name": "hw", "op": "matmul", "args": ["h", "w"]},
              {"name": "sum", "op": "add", "args": ["xr", "hw"]},
              {"name": "scaled", "op": "mul", "args": ["hw", "scale"]},
              {"name": "shifted", "op": "add", "args": ["hw", "shift"]},
              {"name": "i", "op": "slice", "args": ["sum"], "attrs": {"dim": 1, "start": 0, "end": 8, "step": 1}},
              {"name": "f", "op": "slice", "args": ["sum"], "attrs": {"dim": 1, "start": 8, "end": 16, "step": 1}},
              {"name": "g", "op": "slice", "args": ["scaled"], "attrs": {"dim": 1, "start": 16, "end": 24, "step": 1}},
              {"name": "o", "op": "slice", "args": ["shifted"], "attrs": {"dim": 1, "start": 24, "end": 32, "step": 1}},
              {"name": "si", "op": "sigmoid", "args": ["i"]},
              {"name": "tg", "op": "tanh", "args": ["g"]},
              {"name": "sf", "op": "sigmoid", "args": ["f"]},
              {"name": "so", "op": "sigmoid", "args": ["o"]},
              {"name": "ig", "op": "mul", "args": ["si", "tg"]},
              {"name": "fo", "op": "mul", "args": ["sf", "so"]},
              {"name": "out", "op": "add", "args": ["ig", "fo"]}],
    "outputs": ["out"]})"));
}

TEST(SliceHoisting, TheGatesNeedNoKernelStoringTheirSum) {
  Graph g = gated_step();
  const Plan p = lower(g, {});
  int generated = 0;
  for (const PlanKernel& k : p.kernels) generated += k.kind == StepKind::nvrtc;
  EXPECT_EQ(generated, 1) << "one kernel computes the gates where it reads them";
  for (const PlanBuffer& b : p.buffers)
    EXPECT_TRUE(b.name != "sum" && b.name != "scaled" && b.name != "shifted") << "stored: " << b.name;
}

TEST(SliceHoisting, TheGraphComputesTheSameFunctionBitForBit) {
  Graph g = gated_step();
  std::mt19937_64 rng(21);
  auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
  EXPECT_EQ(interpret(decompose(g), inputs, params)[0].data, interpret(primitive_graph(g), inputs, params)[0].data);
}

// `scaled` is read by a slice and by `shifted`: it stays whole (its own readers need all of it), and only `shifted`'s
// slice is taken of its operands... which `scaled` is not (computed): nothing moves.
TEST(SliceHoisting, AValueWithOtherReadersOrComputedOperandsStays) {
  nlohmann::json j = nlohmann::json::parse(R"({"inputs": [{"name": "a", "shape": [4, 8]}, {"name": "b", "shape": [4, 8]}],
    "nodes": [{"name": "s", "op": "add", "args": ["a", "b"]},
              {"name": "t", "op": "tanh", "args": ["s"]},
              {"name": "left", "op": "slice", "args": ["s"], "attrs": {"dim": 1, "start": 0, "end": 4, "step": 1}},
              {"name": "right", "op": "slice", "args": ["t"], "attrs": {"dim": 1, "start": 4, "end": 8, "step": 1}},
              {"name": "out", "op": "mul", "args": ["left", "right"]}],
    "outputs": ["out"]})");
  const Graph d = decompose(graph_from_json(j)), moved = slices_before_elementwise(d);
  ASSERT_EQ(moved.nodes.size(), d.nodes.size());
  for (size_t i = 0; i < d.nodes.size(); ++i) EXPECT_EQ(moved.nodes[i].op, d.nodes[i].op) << i;
}

}  // namespace
}  // namespace kforge
