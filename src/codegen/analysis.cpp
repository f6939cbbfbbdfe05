#include "codegen/analysis.h"

#include "codegen/channels_last.h"
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
    : graph_(lowerable(graph)), primitive_(primitive_graph(graph, target)), has_channels_last_(kforge::has_channels_last_form(primitive_)),
      hash_(stable_hash(graph_to_json(graph).dump())), target_(target) {}

const Graph& GraphAnalysis::primitive(bool channels_last) const {
  if (!channels_last || !has_channels_last_) return primitive_;
  std::call_once(channels_last_once_, [&] { channels_last_ = channels_last_form(primitive_); });
  return channels_last_;
}

const Partition& GraphAnalysis::partition(bool fuse_rows, bool channels_last) const {
  const bool last = channels_last && has_channels_last_;
  std::call_once(once_[last][fuse_rows], [&] {
    partitions_[last][fuse_rows] = kforge::partition(primitive(last), fuse_rows);
    for (KernelGroup& g : partitions_[last][fuse_rows]->groups) g.target = target_;
  });
  return *partitions_[last][fuse_rows];
}

std::shared_ptr<const GraphAnalysis> analyze(const Graph& graph, TargetFacts target) {
  return std::make_shared<const GraphAnalysis>(graph, target);
}

}  // namespace kforge
