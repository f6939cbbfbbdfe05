// Proposes schedules for search: the hand-written default first, then edits of the best schedule so far
// by one small action (tinygrad's search.py): replace one kernel group's schedule with another point of
// its space, or toggle row fusion. Never proposes the same schedule twice. With `skip_starved`, a group's
// schedules that starve the memory (starves_memory) are left out of its space when it has others.
#pragma once
#include <map>
#include <random>
#include <set>
#include <string>

#include "codegen/schedule.h"
#include "ir/graph.h"

namespace kforge {

class ScheduleProposer {
 public:
  ScheduleProposer(const Graph& graph, uint64_t seed, bool skip_starved = false);
  // Next untried schedule near `best`; std::nullopt when the space is exhausted.
  std::optional<Schedule> next(const Schedule& best);
  // `best` with one cuBLASLt product's `algo` moved along the heuristic's list (ascending, up to kMatmulAlgos - 1)
  // to an index not tried yet: the algorithm is chosen by the heuristic first, then measured. std::nullopt once
  // every product group of `best` has had every index. Products only: a cuDNN engine may compile for seconds at load
  // (runtime fusion), a cuBLASLt algorithm costs one call to try. Run 15.1 (python/kforge/library_sweep.py): the
  // heuristic's first fp16 algorithm was 10-20% slower than its third on products in pieces.
  std::optional<Schedule> next_algorithm(const Schedule& best);
  // What a measured plan's library said (EvalResult::library, LoadedPlan::library_steps): a product group offered
  // `offered` algorithms in `precision`, so next_algorithm skips the indices past them (cuBLASLt clamps those to
  // its last: the same call measured again).
  void note_offered(const std::string& group, Precision precision, int offered);
  // Marks a schedule as tried (e.g. the default, or the database's best).
  bool mark(const Schedule& s);
  size_t space_size() const;

 private:
  const Graph& graph_;
  std::mt19937_64 rng_;
  std::set<std::string> tried_;
  std::map<std::pair<std::string, Precision>, int> offered_;  // note_offered: the most a group's steps offered
  std::vector<KernelGroup> fused_, unfused_;
  bool skip_starved_;
  // Each group's space (less what starves the memory, with skip_starved), parallel to fused_ / unfused_:
  // computed once, not on every proposal attempt.
  std::vector<std::vector<KernelSchedule>> fused_spaces_, unfused_spaces_;
  std::vector<KernelSchedule> space_of(const KernelGroup& g) const;
};

}  // namespace kforge
