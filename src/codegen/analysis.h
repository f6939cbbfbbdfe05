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
#include "ir/graph.h"

namespace kforge {

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
  // built at its first use, the same graph where no convolution changes.
  const Graph& primitive(bool channels_last = false) const;
  bool has_channels_last_form() const { return has_channels_last_; }
  const std::string& graph_hash() const { return hash_; } // stable_hash of the given graph's JSON
  const TargetFacts& target() const { return target_; }
  // The partition under `fuse_rows` of primitive(channels_last), built at its first use (the unfused one is
  // often never asked for).
  const Partition& partition(bool fuse_rows, bool channels_last = false) const;
  const std::vector<KernelGroup>& groups(bool fuse_rows, bool channels_last = false) const {
    return partition(fuse_rows, channels_last).groups;
  }

 private:
  Graph graph_, primitive_;
  bool has_channels_last_ = false;
  std::string hash_;
  TargetFacts target_;
  mutable std::once_flag channels_last_once_;
  mutable Graph channels_last_;
  mutable std::once_flag once_[2][2];
  mutable std::optional<Partition> partitions_[2][2];
};

std::shared_ptr<const GraphAnalysis> analyze(const Graph& graph, TargetFacts target = {});

}  // namespace kforge
