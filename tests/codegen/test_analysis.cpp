// One analysis of a graph for all its schedules (codegen/analysis.h): the same plans as lowering the graph
// itself, the partitions built once and at first use, and a graph kept whole refused at once, naming why.
#include "codegen/analysis.h"

#include <gtest/gtest.h>

#include "codegen/lower.h"
#include "common/sample_graphs.h"
#include "ir/error.h"

namespace kforge {
namespace {

TEST(GraphAnalysis, LowersEverySampleAsTheGraphItselfDoes) {
  for (const auto& sample : testing::sample_graphs()) {
    Graph g = graph_from_json(sample.graph);
    auto analysis = analyze(g);
    for (bool fuse : {true, false}) {
      Schedule s;
      s.fuse_rows = fuse;
      Plan once = lower(*analysis, s), again = lower(graph_from_json(sample.graph), s);
      EXPECT_EQ(once.to_json(), again.to_json()) << sample.name;
      EXPECT_EQ(once.graph_hash, analysis->graph_hash()) << sample.name;
      // The partition is built once: the same object for every schedule.
      EXPECT_EQ(&analysis->partition(fuse), &analysis->partition(fuse)) << sample.name;
      EXPECT_EQ(analysis->partition(fuse).graph, &analysis->primitive()) << sample.name;
    }
  }
}

TEST(GraphAnalysis, RefusesAGraphKeptWholeNamingWhy) {
  nlohmann::json j = testing::unary_graph("opaque", {4}, {{"why", "torch.einsum is not expressed"}, {"dtype", "f32"}, {"shape", {4}}});
  try {
    GraphAnalysis a(graph_from_json(j));
    ADD_FAILURE() << "a graph kept whole was analysed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("kept whole"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("torch.einsum is not expressed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge
