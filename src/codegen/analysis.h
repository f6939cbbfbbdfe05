// A graph as lowering sees it, analysed once and handed along: the primitive graph (decompose, reshapes sunk,
// GEMM and convolution epilogues folded) and its partitions into kernel groups, rows fused and not. Every
// schedule of a search lowers from the same analysis, and the search's spaces, features, decisions and recorded
// schedules read the same groups (Halide's Func is analysed once for all its schedules the same way).
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/partition.h"
#include "codegen/schedule.h"
#include "ir/graph.h"

namespace kforge {

// The layout form a schedule's flags ask for of a graph with or without a channels-last form: 0 the default, 1
// channels last, 2 channels last with fp16 convolutions (GraphAnalysis's forms and the proposer's index them so).
inline int layout_form(bool has_channels_last, bool channels_last, bool half) {
  return channels_last && has_channels_last ? 1 + half : 0;
}

class GraphAnalysis {
 public:
  // Implicit: a one-off caller (a test, `kforge lower`) passes a graph where an analysis is asked for; the search
  // builds one per task and hands it along. Throws UserError where the graph is kept whole (an `opaque` op:
  // kforge's generator has nothing to lower) or cannot be decomposed.
  // `target`: the GPU the groups are scheduled for (KernelGroup::target; the search passes its own GPU's).
  GraphAnalysis(const Graph& graph, TargetFacts target = {});  // NOLINT(google-explicit-constructor)
  // The partitions point into primitive(): an analysis stays where it was built (share it, do not copy it).
  GraphAnalysis(const GraphAnalysis&) = delete;
  GraphAnalysis& operator=(const GraphAnalysis&) = delete;

  const Graph& graph() const { return graph_; }  // as given
  // What partition() and the emitters see; with channels_last, its channels-last form (codegen/channels_last.h),
  // the same graph where no convolution changes, and with half too its convolutions in fp16
  // (codegen/half_activations.h); with unrolled, every recurrence unrolled into its steps
  // (codegen/recurrence_unrolling.h), the same graph where there is none. Each form built at its first use.
  const Graph& primitive(bool channels_last = false, bool unrolled = false, bool half = false) const;
  const Graph& primitive(const Schedule& s) const { return primitive(s.channels_last, s.unroll_recurrences, s.half_activations); }
  bool has_channels_last_form() const { return has_channels_last_; }
  bool has_unrolled_form() const { return has_recurrence_; }
  const std::string& graph_hash() const { return hash_; } // stable_hash of the given graph's JSON
  const TargetFacts& target() const { return target_; }
  // The partition under `fuse_rows` of primitive(channels_last, unrolled), built at its first use (the unfused
  // one is often never asked for).
  const Partition& partition(bool fuse_rows, bool channels_last = false, bool unrolled = false, bool half = false) const;
  const Partition& partition(const Schedule& s) const {
    return partition(s.fuse_rows, s.channels_last, s.unroll_recurrences, s.half_activations);
  }
  const std::vector<KernelGroup>& groups(bool fuse_rows, bool channels_last = false, bool unrolled = false, bool half = false) const {
    return partition(fuse_rows, channels_last, unrolled, half).groups;
  }
  const std::vector<KernelGroup>& groups(const Schedule& s) const { return partition(s).groups; }

 private:
  Graph graph_;
  bool has_channels_last_ = false, has_recurrence_ = false;
  std::string hash_;
  TargetFacts target_;
  int layout_form(bool channels_last, bool half) const { return kforge::layout_form(has_channels_last_, channels_last, half); }
  // [unrolled][layout form]: the default form built with the analysis, the others at their first use ([0][0]'s
  // flag unused).
  mutable std::once_flag forms_once_[2][3];
  mutable Graph forms_[2][3];
  mutable std::once_flag once_[2][3][2];
  mutable std::optional<Partition> partitions_[2][3][2];  // [unrolled][layout form][fuse_rows]
};

std::shared_ptr<const GraphAnalysis> analyze(const Graph& graph, TargetFacts target = {});

}  // namespace kforge
