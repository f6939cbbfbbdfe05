// The search loop on one task: propose schedules, measure them through the one measuring path (PlanMeter:
// lowered from one analysis of the graph, compiled in parallel, evaluated in the environment, recorded), keep the
// fastest correct plan. Prints a progress bar (candidates, best speedup, time left).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "codegen/plan.h"
#include "env/evaluator.h"
#include "search/database.h"
#include "search/proposer.h"

namespace kforge {

// How candidates are proposed: `local` edits the best schedule so far (default), `random` draws edits of
// the default schedule only (the baseline a learned policy must beat), `costmodel` ranks many proposals with a
// learned model and measures the best-ranked first, `trained` samples a learned policy (learned_policy.h)
// from a checkpoint, `untrained` the same network freshly initialised (what learning adds is the difference).
enum class Policy { local, random, costmodel, trained, untrained };
Policy policy_from_string(const std::string& s);

struct OptimizeOptions {
  int budget = 32;
  Policy policy = Policy::local;
  std::string cost_model;  // model file for Policy::costmodel (kforge train-costmodel)
  // Policy::trained: a checkpoint file, or a folder whose newest checkpoint is taken. With none there,
  // the search falls back to `local` and says so.
  std::string checkpoint = "kforge_policy";
  bool use_db_prior = true;  // also measure the database's best schedule for this graph and GPU
  // The hand-written openings (hand_written_openings below) before the policy's own proposals, for every policy
  // but the learned ones. The held-out curves turn them off to measure random and cost-model search alone, and
  // keep them as a separate `heuristic` curve.
  bool openings = true;
  uint64_t seed = 1;
  bool progress = true;
  EvalOptions eval = {};
  int compile_threads = 0;  // kernels compiled in parallel before each batch is timed; 0: a hardware thread's each, <= 16
  std::string versions = {};  // recorded with every measurement
};

struct OptimizeResult {
  std::optional<Plan> best;  // strict-tier plans first: the fastest strict one, else the fastest relaxed one
  EvalResult best_eval;
  std::optional<Plan> fastest_relaxed;  // the fastest plan of the relaxed tier (strict ones included)
  EvalResult fastest_relaxed_eval;
  std::string last_failure;  // log of the last candidate that failed, for the report when none passed
  int candidates = 0, compiled = 0, correct = 0, strict = 0;
  double copy_gbs = 0;
  std::string gpu;
  std::string policy;  // the policy that searched: `trained` without a checkpoint falls back to `local`
  nlohmann::json kernel_profile;  // the best plan's groups timed apart (search/kernel_profile.h); null without a plan
};
std::string to_string(Policy p);

// Default, unfused default (where fusion changes the kernels), library steps in TF32, matrix products on the
// split-precision mma kernel, convolutions in TF32 on channels-last tensors: what every hand-written search
// measures first.
std::vector<Schedule> hand_written_openings(const GraphAnalysis& analysis);

// How many of the `left` openings the search measures next, `measured` of `budget` spent: all that fit, less the
// crossovers' room (crossover.h's kCrossoverRoom, where the budget is at least twice it) while crossovers are to
// come. A network's openings (every precision and layout, then a dozen row openings for its norms) would
// otherwise spend the budget before the crossovers, whose plans join the fastest call form with the fastest other
// rest, which no single opening has; the openings left over come after them.
size_t openings_to_measure(size_t left, int budget, int measured, bool crossovers_to_come);

// The schedules a policy measures first, in order; search goes on with the proposer's edits after them.
// `policy` may come back changed: `trained` without a checkpoint falls back to `local`.
std::vector<Schedule> opening_candidates(const GraphAnalysis& analysis, Policy& policy, const OptimizeOptions& opts,
                                         ScheduleProposer& proposer, double copy_gbs);

// Searches on `task`'s device data; the caller keeps the data alive and owns the CUDA context. The local policy
// measures the openings, then once their crossovers (crossover.h), then walks the library calls' engine lists
// (the best plan's and the fastest relaxed plan's in turn), then edits the best plan.
OptimizeResult optimize(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
                        const OptimizeOptions& opts);

}  // namespace kforge
