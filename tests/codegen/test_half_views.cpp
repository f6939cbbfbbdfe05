// Views of a half-precision task's stored tensors taken before their casts (codegen/half_views.h): a BatchNorm's
// bf16 weight and bias and a GroupNorm's f16 input need no kernel storing their cast (every kernel reads the 16-bit
// values through strided loads), the graph computes the same function, and the plan's kernels compile.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "codegen/half_views.h"
#include "codegen/lower.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/interpreter.h"
#include "ir/ops.h"
#include "runtime/compiler.h"

namespace kforge {
namespace {

Graph norm_graph(const std::string& op, const std::string& dtype, const nlohmann::json& attrs) {
  return graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [2, 8, 6, 5], "dtype": ")" + dtype + R"("}],
    "params": [{"name": "w", "shape": [8], "dtype": ")" + dtype + R"("}, {"name": "b", "shape": [8], "dtype": ")" + dtype + R"("}],
    "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
              {"name": "wf", "op": "cast", "args": ["w"], "attrs": {"dtype": "f32"}},
              {"name": "bf", "op": "cast", "args": ["b"], "attrs": {"dtype": "f32"}},
              {"name": "y", "op": ")" + op + R"(", "args": ["xf", "wf", "bf"], "attrs": )" + attrs.dump() + R"(},
              {"name": "out", "op": "cast", "args": ["y"], "attrs": {"dtype": ")" + dtype + R"("}}],
    "outputs": ["out"]})"));
}

TEST(HalfViews, NormsReadTheirHalfPrecisionTensorsWithoutStoredCasts) {
  Compiler c({"sm_90", "", {}});
  const std::pair<std::string, nlohmann::json> norms[] = {{"batch_norm", {{"eps", 1e-5}}},
                                                          {"group_norm", {{"groups", 2}, {"eps", 1e-5}}}};
  for (const auto& [op, attrs] : norms) {
    for (const std::string dtype : {"f16", "bf16"}) {
      Graph g = norm_graph(op, dtype, attrs);
      const Graph d = decompose(g), moved = views_before_half_casts(d);
      std::mt19937_64 rng(5);
      auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
      const auto want = interpret(d, inputs, params), got = interpret(moved, inputs, params);
      ASSERT_EQ(want[0].data, got[0].data) << op << " " << dtype << ": the same function, element for element";
      for (const Node& n : moved.nodes) {  // a cast of half-precision storage reads it or a view of it
        if (n.op != "cast" || n.args.empty() || !is_half(moved.at(n.args[0]).type.dtype)) continue;
        const Node& read = moved.at(n.args[0]);
        EXPECT_TRUE(read.op == "input" || read.op == "param" || is_view_op(read.op)) << read.op;
      }
      Plan p = lower(g, {});
      for (const PlanKernel& k : p.kernels) {
        EXPECT_TRUE(k.name.find("_f32") == std::string::npos && k.name.find("wf") == std::string::npos &&
                    k.name.find("xf") == std::string::npos) << op << " " << dtype << ": a kernel storing a cast: " << k.name;
        CompileResult r = c.compile(k.source, k.name);
        EXPECT_TRUE(r.ok) << k.name << "\n" << r.log;
      }
      std::set<std::string> buffers;
      for (const PlanBuffer& b : p.buffers) buffers.insert(b.name);
      EXPECT_FALSE(buffers.count("wf") || buffers.count("bf") || buffers.count("xf")) << op << " " << dtype;
    }
  }
}

}  // namespace
}  // namespace kforge
