#include "codegen/analysis.h"

#include <algorithm>

#include "codegen/channels_last.h"
#include "codegen/half_activations.h"
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
    : graph_(lowerable(graph)), hash_(stable_hash(graph_to_json(graph).dump())), target_(target) {
  forms_[0][0] = primitive_graph(graph_, target_);
  has_channels_last_ = kforge::has_channels_last_form(forms_[0][0]);
  has_recurrence_ = std::any_of(forms_[0][0].nodes.begin(), forms_[0][0].nodes.end(),
                                [](const Node& n) { return n.op == "recurrence"; });
}

const Graph& GraphAnalysis::primitive(bool channels_last, bool unrolled, bool half) const {
  const int layout = layout_form(channels_last, half);
  const bool steps = unrolled && has_recurrence_;
  if (steps) std::call_once(forms_once_[1][0], [&] { forms_[1][0] = primitive_graph(graph_, target_, true); });
  if (layout >= 1) std::call_once(forms_once_[steps][1], [&] { forms_[steps][1] = channels_last_form(forms_[steps][0]); });
  if (layout == 2) std::call_once(forms_once_[steps][2], [&] { forms_[steps][2] = half_activations_form(forms_[steps][1]); });
  return forms_[steps][layout];
}

const Partition& GraphAnalysis::partition(bool fuse_rows, bool channels_last, bool unrolled, bool half) const {
  const int layout = layout_form(channels_last, half);
  const bool steps = unrolled && has_recurrence_;
  std::call_once(once_[steps][layout][fuse_rows], [&] {
    partitions_[steps][layout][fuse_rows] = kforge::partition(primitive(channels_last, steps, half), fuse_rows);
    for (KernelGroup& g : partitions_[steps][layout][fuse_rows]->groups) g.target = target_;
  });
  return *partitions_[steps][layout][fuse_rows];
}

std::shared_ptr<const GraphAnalysis> analyze(const Graph& graph, TargetFacts target) {
  return std::make_shared<const GraphAnalysis>(graph, target);
}

}  // namespace kforge
