// The learned policy's action space, as a sequence of decisions. A plan is built by first taking the
// plan-level choice (row fusion x CUDA graph), then one decision per kernel group of the partition that
// choice gives, in launch order: a whole KernelSchedule from schedule_space(group). Every legal candidate of
// a decision is one feature row (the task, the group it schedules, the action itself, and the choices taken
// so far), and a policy scores rows, not fixed slots (pointer-style): a new op family's groups and schedule
// points join without changes here or in the policy. No PyTorch here: tests and builds without libtorch use it.
#pragma once
#include <string>
#include <vector>

#include "codegen/schedule.h"
#include "ir/graph.h"
#include "search/features.h"

namespace kforge {

using FeatureRow = std::vector<float>;

// One decision taken: the rows of its legal candidates and the index chosen.
struct Decision {
  std::vector<FeatureRow> rows;
  int chosen = -1;
};

class PlanDecisions {
 public:
  PlanDecisions(const GraphAnalysis& analysis, const GpuInfo& gpu);
  bool done() const { return step_ > int(groups().size()); }
  // Rows of the current decision's legal candidates (never empty before done()).
  const std::vector<FeatureRow>& candidates() const { return rows_; }
  void choose(int index);
  // The candidate at the current decision that `s` takes (to replay a recorded schedule); -1 if none.
  int index_of(const Schedule& s) const;
  const Schedule& schedule() const { return schedule_; }
  const std::vector<Decision>& decisions() const { return taken_; }
  // The task's features, squashed: what the critic sees.
  const FeatureRow& task_row() const { return task_; }

 private:
  const std::vector<KernelGroup>& groups() const { return schedule_.fuse_rows ? fused_ : unfused_; }
  void build_rows();
  std::vector<KernelGroup> fused_, unfused_;
  std::vector<KernelSchedule> space_;  // the current group's legal schedules
  FeatureRow task_;
  std::vector<FeatureRow> rows_;
  std::vector<Decision> taken_;
  Schedule schedule_;
  int step_ = 0;  // 0: plan-level choice; k >= 1: kernel group k - 1
  double sum_log_block_ = 0, splits_ = 0, cached_ = 0;
};

// The plan-level choices, in candidate order.
struct PlanChoice {
  bool fuse_rows, cuda_graph;
};
const std::vector<PlanChoice>& plan_choices();

// Names of a candidate row's entries, and a fingerprint of the action space and feature schema: a policy
// checkpoint records it and refuses to load under another.
const std::vector<std::string>& decision_feature_names();
std::string action_space_version();

// The schedule built by taking `choices` in order (clamped to each decision's range): for tests and replays.
Schedule schedule_from_choices(const GraphAnalysis& analysis, const std::vector<int>& choices);

}  // namespace kforge
