#include "search/measure.h"

#include <atomic>
#include <set>
#include <thread>

#include "codegen/lower.h"
#include "ir/error.h"
#include "ir/hash.h"
#include "runtime/driver.h"
#include "runtime/target.h"
#include "search/kernel_profile.h"

namespace kforge {

std::string plan_key(const Plan& p) {
  std::string k = p.schedule.cuda_graph ? "graph" : "direct";
  for (auto& kernel : p.kernels) {
    // A library step has no source: its parameters (precision, algorithm, ...) tell it apart.
    std::string what = kernel.kind == StepKind::nvrtc ? kernel.source : kernel.library.dump();
    k.append("|").append(stable_hash(what)).append(":").append(std::to_string(kernel.grid)).append("x");
    k.append(std::to_string(kernel.block)).append("+").append(std::to_string(kernel.smem));
  }
  return k;
}

Measurement measurement_of(const std::string& task, const GraphAnalysis& analysis, const Schedule& s, const EvalResult& r,
                           const std::string& gpu, const std::string& versions) {
  Schedule recorded = s;
  try {
    recorded = explicit_schedule(analysis, s);
  } catch (const UserError&) {  // not lowerable: recorded as proposed, with its failure
  }
  Measurement m{task, analysis.graph_hash(), to_json(recorded).dump(), gpu, versions};
  m.compiled = r.compiled;
  m.strict = r.strict;
  m.relaxed = r.relaxed;
  m.median_ms = r.native.median_ms;
  m.mean_ms = r.native.mean_ms;
  m.reward = r.reward.reward;
  m.speedup_best = r.reward.speedup_best;
  m.log = r.log;
  return m;
}

void precompile(const std::vector<Plan>& plans, const Compiler& compiler, int threads) {
  std::vector<std::pair<std::string, std::string>> work;  // distinct (source, name)
  std::set<std::string> seen;
  for (auto& p : plans)
    for (auto& k : p.kernels)
      if (k.kind == StepKind::nvrtc && seen.insert(k.source).second) work.push_back({k.source, k.name});
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < work.size();) compiler.compile(work[i].first, work[i].second);  // fills the cache
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads) && size_t(t) < work.size(); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

PlanMeter::PlanMeter(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
                     const std::string& versions, int compile_threads, EvalOptions eo)
    : spec_(spec), task_(task), db_(db), compiler_(compiler), versions_(versions), analysis_(analyze(spec.graph, Target::here().facts())),
      threads_(compile_threads), eo_(std::move(eo)) {
  ensure_context();
  gpu_ = device_name();
  KF_CU(driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  if (eo_.copy_gbs <= 0) eo_.copy_gbs = measure_copy_bandwidth(stream_);
  verifier_.emplace(compiler);
  db_.record_task(analysis_->graph_hash(), spec.name, graph_to_json(spec.graph).dump());
}

nlohmann::json PlanMeter::profile(const Plan& plan) {
  LoadedPlan exe(plan, compiler_);
  TimingOptions o = eo_.timing;
  o.trials = std::min(o.trials, 10);  // a breakdown, not the plan's time: ten trials place every step
  return kernel_profile(*analysis_, plan, time_steps(exe, task_.bindings(0), stream_, o));
}

PlanMeter::~PlanMeter() {
  verifier_.reset();
  if (stream_) driver().cuStreamDestroy(stream_);
}

std::vector<PlanMeter::Result> PlanMeter::measure(const std::vector<Schedule>& schedules) {
  std::vector<Result> out(schedules.size());
  std::vector<Plan> fresh;
  for (size_t i = 0; i < schedules.size(); ++i) {
    try {
      out[i].plan = lower(*analysis_, schedules[i]);
      out[i].key = plan_key(*out[i].plan);
      if (!done_.count(out[i].key)) fresh.push_back(*out[i].plan);
    } catch (const UserError& e) {
      out[i].key = "unlowerable:" + to_json(schedules[i]).dump();
      out[i].eval.log = std::string("lowering failed: ") + e.what();
    }
  }
  precompile(fresh, compiler_, threads_);
  for (size_t i = 0; i < schedules.size(); ++i) {
    Result& r = out[i];
    if (auto it = done_.find(r.key); it != done_.end()) {
      r.eval = it->second;
      r.repeat = true;
      continue;
    }
    if (r.plan) {
      try {
        r.eval = evaluate(spec_, task_, *r.plan, compiler_, *verifier_, eo_, stream_);
      } catch (const UserError& e) {
        r.eval.log = std::string("launch failed: ") + e.what();
      }
    }
    db_.record(measurement_of(spec_.name, *analysis_, schedules[i], r.eval, gpu_, versions_));
    done_[r.key] = r.eval;
  }
  return out;
}

}  // namespace kforge
