// The search loop on one task: propose a schedule, lower it, evaluate it in the environment, record the
// measurement, keep the fastest correct plan. Prints a progress bar (candidates, best speedup, time left).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "codegen/plan.h"
#include "env/evaluator.h"
#include "search/database.h"

namespace kforge {

// How candidates are proposed: `local` edits the best schedule so far (default), `random` draws edits of
// the default schedule only (the baseline a learned policy must beat), `costmodel` ranks many proposals with a
// learned model and measures the best-ranked first.
enum class Policy { local, random, costmodel };
Policy policy_from_string(const std::string& s);

struct OptimizeOptions {
  int budget = 32;
  Policy policy = Policy::local;
  std::string cost_model;  // model file for Policy::costmodel (kforge train-costmodel)
  uint64_t seed = 1;
  bool progress = true;
  EvalOptions eval;
  std::string versions;  // recorded with every measurement
};

struct OptimizeResult {
  std::optional<Plan> best;
  EvalResult best_eval;
  std::string last_failure;  // log of the last candidate that failed, for the report when none passed
  int candidates = 0, compiled = 0, correct = 0, strict = 0;
  double copy_gbs = 0;
  std::string gpu;
};

// Searches on `task`'s device data; the caller keeps the data alive and owns the CUDA context.
OptimizeResult optimize(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
                        const OptimizeOptions& opts);

}  // namespace kforge
