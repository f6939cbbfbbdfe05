#include "codegen/analysis.h"

#include "codegen/lower.h"
#include "ir/error.h"
#include "ir/hash.h"

namespace kforge {

namespace {
const Graph& lowerable(const Graph& graph) {
  for (const Node& n : graph.nodes)
    if (n.op == "opaque")
      throw UserError("this task's model is kept whole: kforge's importer could not follow it (" +
                      n.attrs.value("why", std::string("no reason given")) +
                      "), so kforge's generator has nothing to lower; ModelNew and raw CUDA candidates are judged against it");
  return graph;
}
}  // namespace

GraphAnalysis::GraphAnalysis(const Graph& graph, TargetFacts target)
    : graph_(lowerable(graph)), primitive_(primitive_graph(graph, target)), hash_(stable_hash(graph_to_json(graph).dump())),
      target_(target) {}

const Partition& GraphAnalysis::partition(bool fuse_rows) const {
  std::call_once(once_[fuse_rows], [&] {
    partitions_[fuse_rows] = kforge::partition(primitive_, fuse_rows);
    for (KernelGroup& g : partitions_[fuse_rows]->groups) g.target = target_;
  });
  return *partitions_[fuse_rows];
}

std::shared_ptr<const GraphAnalysis> analyze(const Graph& graph, TargetFacts target) {
  return std::make_shared<const GraphAnalysis>(graph, target);
}

}  // namespace kforge
