// Crossovers (search/crossover.h): the best call form measured with the best other rest, GPU-free.
#include <gtest/gtest.h>

#include "codegen/analysis.h"
#include "common/conv_graphs.h"
#include "search/crossover.h"

namespace kforge {
namespace {

// conv -> BatchNorm -> ReLU: fused, one row kernel per channel computes the statistics and the output; unfused,
// split statistics and a pointwise kernel. The convolution's group keeps its key either way.
nlohmann::json conv_batch_norm_relu() {
  nlohmann::json g = testing::conv_graph("conv2d_no_bias");  // 8 output channels
  g["nodes"][0]["name"] = "c";
  for (const char* p : {"gamma", "beta"}) g["params"].push_back({{"name", p}, {"shape", {8}}, {"dtype", "f32"}});
  g["nodes"].push_back({{"name", "n"}, {"op", "batch_norm"}, {"args", {"c", "gamma", "beta"}}, {"attrs", {{"eps", 1e-5}}}});
  g["nodes"].push_back({{"name", "y"}, {"op", "relu"}, {"args", {"n"}}});
  return g;
}

std::string conv_key(const GraphAnalysis& a, bool fuse_rows) {
  for (const KernelGroup& g : a.groups(fuse_rows))
    if (g.kind == GroupKind::conv) return g.key;
  return "";
}

TEST(Crossover, JoinsTheFastestCallFormWithTheFastestOtherRest) {
  GraphAnalysis a(graph_from_json(conv_batch_norm_relu()));
  const std::string conv = conv_key(a, true);
  ASSERT_FALSE(conv.empty());
  ASSERT_EQ(conv_key(a, false), conv);
  ASSERT_NE(a.groups(true).size(), a.groups(false).size());

  Schedule fp16;  // the fastest plan: its convolution in fp16, the rest the fused default
  fp16.kernels[conv] = {.strategy = Strategy::library, .precision = Precision::fp16, .layout = Layout::nhwc};
  Schedule unfused;
  unfused.fuse_rows = false;
  Schedule no_graph;
  no_graph.cuda_graph = false;
  std::vector<MeasuredSchedule> measured = {{Schedule{}, 0.9}, {fp16, 0.4}, {unfused, 0.8}, {no_graph, 0.95}};

  std::vector<Schedule> kids = crossovers(a, {fp16}, measured);
  ASSERT_EQ(kids.size(), 2u);  // the two fastest rests besides fp16's own
  Schedule want = unfused;
  want.kernels[conv] = fp16.kernels[conv];
  EXPECT_EQ(kids[0], want);
  want = no_graph;
  want.kernels[conv] = fp16.kernels[conv];
  EXPECT_EQ(kids[1], want);
  for (const Schedule& kid : kids)
    for (const KernelGroup& g : a.groups(kid.fuse_rows)) EXPECT_NO_THROW(schedule_for(kid, g));

  // Two donors: each gets its own children, none twice; no donor, no children.
  std::vector<Schedule> both = crossovers(a, {fp16, Schedule{}}, measured);
  EXPECT_EQ(both.size(), 4u);
  EXPECT_TRUE(crossovers(a, {}, measured).empty());
}

TEST(Crossover, SkipsACallFormIllegalInTheOtherRest) {
  GraphAnalysis a(graph_from_json(conv_batch_norm_relu()));
  const std::string conv = conv_key(a, true);
  Schedule odd;  // a convolution schedule no group allows
  odd.kernels[conv] = {.strategy = Strategy::library, .precision = Precision::fp16, .layout = Layout::nhwc};
  odd.kernels[conv].algo = -3;
  Schedule unfused;
  unfused.fuse_rows = false;
  EXPECT_TRUE(crossovers(a, {odd}, {{unfused, 1.0}}).empty());
}

}  // namespace
}  // namespace kforge
