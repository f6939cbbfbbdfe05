// Measuring a batch of candidate schedules on one task, for learning and evaluation: lower each, drop
// those that lower to an already measured plan (the same kernels: tinygrad drops duplicate binaries), compile
// every distinct kernel in parallel first (NVRTC is CPU-bound and cached on disk; the GPU then times one plan
// after another without waiting), evaluate in the environment and record every measurement in the database.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/analysis.h"
#include "codegen/plan.h"
#include "env/evaluator.h"
#include "search/database.h"

namespace kforge {

// What makes two plans the same candidate: their kernels (source and launch geometry) and graph replay.
std::string plan_key(const Plan& p);

// The database row for one evaluated schedule of the task named `task`.
Measurement measurement_of(const std::string& task, const GraphAnalysis& analysis, const Schedule& s, const EvalResult& r,
                           const std::string& gpu, const std::string& versions);

// Compiles every kernel of `plans` that the cache lacks, on up to `threads` threads.
void precompile(const std::vector<Plan>& plans, const Compiler& compiler, int threads);

class PlanMeter {
 public:
  // Context, stream, copy bandwidth, verifier and the graph's analysis for one task; the caller keeps `task`
  // alive. `eo`: the evaluation's options (its copy bandwidth measured here where 0).
  PlanMeter(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
            const std::string& versions, int compile_threads, EvalOptions eo = {});
  ~PlanMeter();
  PlanMeter(const PlanMeter&) = delete;
  PlanMeter& operator=(const PlanMeter&) = delete;

  struct Result {
    std::string key;  // plan_key, or "unlowerable:<schedule>" when lowering failed
    EvalResult eval;
    bool repeat = false;  // the same plan as an earlier schedule of this meter: measured once, result reused
    std::optional<Plan> plan;  // what the schedule lowered to; nullopt where it did not
  };
  // Results in the order of `schedules`; each plan's kernels compiled first, in parallel.
  std::vector<Result> measure(const std::vector<Schedule>& schedules);
  // Each kernel group of `plan` timed apart on set 0 (search/kernel_profile.h), with its bytes and FLOPs.
  nlohmann::json profile(const Plan& plan);
  const GraphAnalysis& analysis() const { return *analysis_; }
  const std::string& gpu() const { return gpu_; }
  double copy_gbs() const { return eo_.copy_gbs; }

 private:
  const TaskSpec& spec_;
  DeviceTask& task_;
  MeasurementDB& db_;
  const Compiler& compiler_;
  std::string versions_, gpu_;
  std::shared_ptr<const GraphAnalysis> analysis_;
  int threads_;
  EvalOptions eo_;
  CUstream stream_ = nullptr;
  std::optional<Verifier> verifier_;
  std::map<std::string, EvalResult> done_;
};

}  // namespace kforge
