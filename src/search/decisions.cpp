#include "search/decisions.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "codegen/lower.h"
#include "ir/error.h"
#include "ir/hash.h"
#include "ir/types.h"

namespace kforge {

namespace {

// Task features span many orders of magnitude (bytes, bandwidth); a network trains on signed log scale.
float squash(double x) { return float(std::copysign(std::log1p(std::fabs(x)), x)); }
float lg(double x) { return float(std::log2(std::max(1.0, x))); }

}  // namespace

const std::vector<PlanChoice>& plan_choices() {
  static const std::vector<PlanChoice> c = {{true, true}, {true, false}, {false, true}, {false, false}};
  return c;
}

// The per-kernel action features after the strategy one-hot, in the order build_rows writes them; a plan-level
// row pads them with zeros.
constexpr const char* kKernelActions[] = {
    "action.log_block", "action.vec", "action.log_items", "action.log_chunks", "action.cache_row",
    "action.cache_registers", "action.cache_bulk", "action.tf32", "action.tf32x3", "action.fp16", "action.bf16", "action.fp16x3", "action.algo", "action.nhwc", "action.library_epilogue", "action.is_default",
    "action.log_threads", "action.log_blocks", "action.log_work_per_thread"};

const std::vector<std::string>& decision_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (size_t i = 0; i < task_feature_count(); ++i) n.push_back(feature_names()[i]);
    for (auto s : {"decision.plan_level", "decision.progress", "decision.log_groups"}) n.push_back(s);
    for (int k = 0; k < kGroupKindCount; ++k) n.push_back("group." + to_string(GroupKind(k)));
    for (auto s : {"group.log_numel", "group.log_rows", "group.log_row_length", "group.stats", "group.elem_outputs",
                   "group.innermost_kept", "group.rank"})
      n.push_back(s);
    for (auto st : all_strategies()) n.push_back("action." + to_string(st));
    for (auto s : kKernelActions) n.push_back(s);
    for (auto s : {"action.fuse_rows", "action.cuda_graph", "action.log_kernels"}) n.push_back(s);
    for (auto s : {"context.fuse_rows", "context.cuda_graph", "context.mean_log_block", "context.splits", "context.cached"})
      n.push_back(s);
    return n;
  }();
  return names;
}

std::string action_space_version() {
  // Bump the number when the meaning of a decision changes without its names changing.
  std::string v = "actions-1:";
  for (auto& n : decision_feature_names()) v += n + ",";
  return "actions-1-" + stable_hash(v);
}

PlanDecisions::PlanDecisions(const GraphAnalysis& analysis, const GpuInfo& gpu)
    : fused_(analysis.groups(true)), unfused_(analysis.groups(false)) {
  for (double x : task_vector(task_features(analysis.graph(), gpu))) task_.push_back(squash(x));
  build_rows();
}

void PlanDecisions::build_rows() {
  rows_.clear();
  space_.clear();
  if (done()) return;
  double total = double(groups().size());
  auto row = [&](bool plan_level) {
    FeatureRow r = task_;
    r.insert(r.end(), {float(plan_level), float(plan_level ? 0 : step_ / std::max(1.0, total)), lg(total)});
    return r;
  };
  auto context = [&](FeatureRow& r) {
    double decided = std::max(1, step_ - 1);
    r.insert(r.end(), {float(step_ > 0 && schedule_.fuse_rows), float(step_ > 0 && schedule_.cuda_graph),
                       float(step_ > 1 ? sum_log_block_ / decided : 0), float(splits_), float(cached_)});
  };
  if (step_ == 0) {
    for (auto& c : plan_choices()) {
      FeatureRow r = row(true);
      r.insert(r.end(), kGroupKindCount + 7 + all_strategies().size() + std::size(kKernelActions), 0.f);  // no group, no kernel schedule
      r.insert(r.end(), {float(c.fuse_rows), float(c.cuda_graph), lg(double((c.fuse_rows ? fused_ : unfused_).size()))});
      context(r);
      rows_.push_back(std::move(r));
    }
    return;
  }
  const KernelGroup& g = groups()[size_t(step_ - 1)];
  space_ = schedule_space(g);
  KF_ASSERT(!space_.empty(), "kernel group " + g.key + " has no legal schedule");
  KernelSchedule def = default_schedule(g);
  bool innermost_kept = keeps_innermost(g);
  for (auto& ks : space_) {
    FeatureRow r = row(false);
    for (int k = 0; k < kGroupKindCount; ++k) r.push_back(float(int(g.kind) == k));
    r.insert(r.end(), {lg(double(numel(g.shape))), lg(double(rows_of(g))), lg(double(row_length(g))),
                       float(g.stats.size()), float(!g.elem_outputs.empty()), float(innermost_kept), float(g.shape.size())});
    for (auto st : all_strategies()) r.push_back(float(ks.strategy == st));
    auto [threads, blocks] = launch_size(g, ks);
    r.insert(r.end(), {lg(ks.block), float(ks.vec), lg(ks.items), lg(ks.chunks), float(ks.cache_row != RowCache::none),
                       float(ks.cache_row == RowCache::registers), float(ks.cache_row == RowCache::bulk),
                       float(ks.precision == Precision::tf32),
                       float(ks.precision == Precision::tf32x3), float(ks.precision == Precision::fp16),
                       float(ks.precision == Precision::bf16), float(ks.precision == Precision::fp16x3), float(ks.algo), float(ks.layout == Layout::nhwc),
                       float(ks.library_epilogue),
                       float(ks == def),
                       lg(threads), lg(blocks), lg(double(numel(g.shape)) / std::max(1.0, threads))});
    r.insert(r.end(), 3, 0.f);  // no plan-level action
    context(r);
    rows_.push_back(std::move(r));
  }
}

void PlanDecisions::choose(int index) {
  KF_ASSERT(!done() && index >= 0 && size_t(index) < rows_.size(), "decision index out of range");
  taken_.push_back({rows_, index});
  if (step_ == 0) {
    schedule_.fuse_rows = plan_choices()[size_t(index)].fuse_rows;
    schedule_.cuda_graph = plan_choices()[size_t(index)].cuda_graph;
  } else {
    const KernelSchedule& ks = space_[size_t(index)];
    schedule_.kernels[groups()[size_t(step_ - 1)].key] = ks;
    sum_log_block_ += std::log2(double(ks.block));
    splits_ += ks.strategy == Strategy::split;
    cached_ += ks.cache_row != RowCache::none;
  }
  ++step_;
  build_rows();
}

int PlanDecisions::index_of(const Schedule& s) const {
  if (done()) return -1;
  if (step_ == 0) {
    for (size_t i = 0; i < plan_choices().size(); ++i)
      if (plan_choices()[i].fuse_rows == s.fuse_rows && plan_choices()[i].cuda_graph == s.cuda_graph) return int(i);
    return -1;
  }
  KernelSchedule want = schedule_for(s, groups()[size_t(step_ - 1)]);
  auto it = std::find(space_.begin(), space_.end(), want);
  return it == space_.end() ? -1 : int(it - space_.begin());
}

Schedule schedule_from_choices(const GraphAnalysis& analysis, const std::vector<int>& choices) {
  PlanDecisions d(analysis, {});
  for (size_t i = 0; !d.done(); ++i) {
    int n = int(d.candidates().size());
    d.choose(i < choices.size() ? std::clamp(choices[i], 0, n - 1) : 0);
  }
  return d.schedule();
}

}  // namespace kforge
