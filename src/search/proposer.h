// Proposes schedules for search: the hand-written default first, then edits of the best schedule so far
// by one small action (tinygrad's search.py): replace one kernel group's schedule with another point of
// its space, or toggle row fusion or (where the graph has one: codegen/channels_last.h) the channels-last form. Never proposes the same schedule twice. With `skip_starved`, a group's
// schedules that starve the memory (starves_memory) are left out of its space when it has others.
#pragma once
#include <map>
#include <random>
#include <set>
#include <string>

#include "codegen/analysis.h"
#include "codegen/schedule.h"
#include "ir/graph.h"

namespace kforge {

// A library call as its heuristic sees it: each form gets its own list of algorithms or engines. A product's is its
// precision; a convolution's also its layout and whether cuDNN's graph applies the epilogue (the library step's
// JSON: LoadedPlan::library_steps).
struct CallForm {
  Precision precision = Precision::fp32;
  std::string layout;          // a convolution's: "nchw" or "nhwc"; "" for a product
  bool library_epilogue = false;
  auto operator<=>(const CallForm&) const = default;
};

class ScheduleProposer {
 public:
  ScheduleProposer(const GraphAnalysis& analysis, uint64_t seed, bool skip_starved = false);
  // Next untried schedule near `best`; std::nullopt when the space is exhausted.
  std::optional<Schedule> next(const Schedule& best);
  // `best` with one library call's `algo` moved along its heuristic's list (ascending, up to kMatmulAlgos - 1 for a
  // cuBLASLt product, kConvEngines - 1 for a cuDNN convolution) to an index not tried yet: the algorithm or engine
  // is chosen by the heuristic first, then measured. Every product's indices come before any convolution's: a
  // cuBLASLt algorithm costs one call to try, a cuDNN engine may build for seconds at load (runtime fusion).
  // std::nullopt once every library group of `best` has had every index. Measured: the heuristic's first fp16
  // algorithm was 10-20% slower than its third on products in pieces, and an fp16x3 engine 8-19% faster than the
  // search's pick on three convolutions (python/kforge/library_sweep.py).
  std::optional<Schedule> next_algorithm(const Schedule& best);
  // What a measured plan's library step said (EvalResult::library, LoadedPlan::library_steps) for a group's call in
  // `form`: it offered `offered` entries, and index `requested` ran as `used`. next_algorithm skips the indices the
  // step would clamp to its last usable entry (the same call measured again): those past the most any step offered,
  // and past `used` where a request was clamped to it (cuDNN's offer counts engines the step may not use: a
  // precision's or the workspace's limits drop some).
  void note_offered(const std::string& group, const CallForm& form, int offered, int requested, int used);
  // Marks a schedule as tried (e.g. the default, or the database's best).
  bool mark(const Schedule& s);
  size_t space_size() const;

 private:
  std::mt19937_64 rng_;
  std::set<std::string> tried_;
  struct ListLength {
    int offered = 0;          // the most a step of the group offered
    int usable = 1 << 30;     // a clamped request's index + 1
  };
  std::map<std::pair<std::string, CallForm>, ListLength> lists_;  // note_offered
  // channels_last_, unrolled_: the graph has a channels-last form, a form with its recurrences unrolled worth
  // measuring (codegen/recurrence_unrolling.h).
  bool skip_starved_, channels_last_, unrolled_;
  // The groups of each form of the plan ([unrolled][layout form: default, channels last, channels last in fp16]
  // [fuse_rows]) and each group's space (less what starves the memory, with skip_starved), computed once, not on
  // every proposal attempt.
  struct Form {
    std::vector<KernelGroup> groups;
    std::vector<std::vector<KernelSchedule>> spaces;
  };
  Form forms_[2][3][2];
  const Form& form_of(const Schedule& s) const {
    return forms_[s.unroll_recurrences && unrolled_][layout_form(channels_last_, s.channels_last, s.half_activations)][s.fuse_rows];
  }
  // Drops the kernels' schedules that `s`'s form lacks a group for or holds illegal (after a change of form).
  void keep_legal(Schedule& s) const;
  std::vector<KernelSchedule> space_of(const KernelGroup& g) const;
};

}  // namespace kforge
