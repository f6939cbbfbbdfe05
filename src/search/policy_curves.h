// Held-out evaluation of search policies (issue 5): for one task, the best time each policy has found after
// 1..N measured candidates, and the best of a longer heuristic search (the hand-written openings, then random
// proposals) as the reference. Every distinct plan is measured once and shared by all policies that propose it
// (search/measure.h), so the curves differ only by which plans a policy proposes and in what order, not by
// timing noise.
#pragma once
#include <string>
#include <vector>

#include "env/evaluator.h"
#include "search/database.h"
#include "search/optimize.h"

namespace kforge {

struct CurveOptions {
  int candidates = 64;           // N: distinct plans per policy
  int reference = 256;           // distinct plans of the reference search (the openings, then random proposals)
  // random and costmodel propose alone; heuristic is the hand-written openings, then random proposals.
  std::vector<std::string> policies = {"trained", "untrained", "random", "costmodel", "heuristic"};
  OptimizeOptions search;        // checkpoint, cost model, seed, versions (budget is set from `candidates`)
  int compile_threads = 16;
};

// Each policy's first `candidates` schedules that lower to distinct plans, in its order, then "reference": the
// first `reference` of the heuristic search (random search of that length with the hand-written openings
// first). Throws UserError for `local` (its order depends on measurements) and for `trained` without a
// checkpoint; skips `costmodel` without a model. No GPU needed.
std::vector<std::pair<std::string, std::vector<Schedule>>> candidate_sequences(const GraphAnalysis& analysis, const CurveOptions& opts,
                                                                              double copy_gbs);

// {"task", "eager_ms", "compile_ms", "policies": {NAME: {"best_ms": [N values, null before the first correct plan],
//   "candidates": n}}, "reference": {"best_ms", "candidates"}, "distinct_plans_measured"}.
nlohmann::json policy_curves(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
                             const CurveOptions& opts);

}  // namespace kforge
