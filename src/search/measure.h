// Measuring a batch of candidate schedules on one task, for learning and evaluation: lower each, drop
// those that lower to an already measured plan (the same kernels: tinygrad drops duplicate binaries), compile
// every distinct kernel in parallel first (NVRTC is CPU-bound and cached on disk; the GPU then times one plan
// after another without waiting), evaluate in the environment and record every measurement in the database.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "env/evaluator.h"
#include "search/database.h"

namespace kforge {

// What makes two plans the same candidate: their kernels (source and launch geometry) and graph replay.
std::string plan_key(const Plan& p);

// The database row for one evaluated schedule.
Measurement measurement_of(const TaskSpec& spec, const std::string& graph_hash, const Schedule& s, const EvalResult& r,
                           const std::string& gpu, const std::string& versions);

// Compiles every kernel of `plans` that the cache lacks, on up to `threads` threads.
void precompile(const std::vector<Plan>& plans, const Compiler& compiler, int threads);

class PlanMeter {
 public:
  // Context, stream, copy bandwidth and verifier for one task; the caller keeps `task` alive.
  PlanMeter(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
            const std::string& versions, int compile_threads);
  ~PlanMeter();
  PlanMeter(const PlanMeter&) = delete;
  PlanMeter& operator=(const PlanMeter&) = delete;

  struct Result {
    std::string key;  // plan_key, or "unlowerable:<schedule>" when lowering failed
    EvalResult eval;
    bool repeat = false;  // the same plan as an earlier schedule of this meter: measured once, result reused
  };
  // Results in the order of `schedules`.
  std::vector<Result> measure(const std::vector<Schedule>& schedules);
  const std::string& gpu() const { return gpu_; }
  double copy_gbs() const { return eo_.copy_gbs; }

 private:
  const TaskSpec& spec_;
  DeviceTask& task_;
  MeasurementDB& db_;
  const Compiler& compiler_;
  std::string versions_, gpu_, graph_hash_;
  int threads_;
  EvalOptions eo_;
  CUstream stream_ = nullptr;
  std::optional<Verifier> verifier_;
  std::map<std::string, EvalResult> done_;
};

}  // namespace kforge
