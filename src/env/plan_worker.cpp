#include "env/plan_worker.h"

#include <iostream>

#include "codegen/lower.h"
#include "env/evaluator.h"
#include "env/gpu_lock.h"
#include "ir/error.h"
#include "runtime/driver.h"
#include "runtime/target.h"

namespace kforge {

namespace {

using nlohmann::json;

// Fingerprints of everything a later job is checked against: every set's inputs and references, and the
// params. A generated kernel with an out-of-bounds write could otherwise corrupt them unnoticed.
std::vector<std::pair<uint64_t, uint64_t>> task_fingerprints(const Graph& g, const DeviceTask& task, Verifier& v,
                                                              CUstream stream) {
  std::vector<std::pair<uint64_t, uint64_t>> f;
  auto bytes = [&](int id) { return size_t(nbytes(g.at(id).type)); };
  for (int s = 0; s < task.num_sets(); ++s) {
    Bindings b = task.bindings(s);
    for (size_t i = 0; i < b.inputs.size(); ++i) f.push_back(v.fingerprint(b.inputs[i], bytes(g.inputs[i]), stream));
    for (size_t j = 0; j < g.outputs.size(); ++j) f.push_back(v.fingerprint(task.reference(s, int(j)), bytes(g.outputs[j]), stream));
    if (s == 0)
      for (size_t i = 0; i < b.params.size(); ++i) f.push_back(v.fingerprint(b.params[i], bytes(g.params[i]), stream));
  }
  return f;
}

}  // namespace

int serve_plan_jobs(const std::string& bundle_dir, const std::string& drawn, const std::string& gpu_lock, std::istream& in,
                    std::ostream& out) {
  Bundle loaded = load_bundle(bundle_dir);
  if (!drawn.empty()) add_drawn_sets(loaded, drawn);
  TaskSession s(std::move(loaded));
  const Bundle& b = s.bundle;
  EvalOptions eo;
  eo.tol = b.tolerance;
  {
    GpuLock turn(gpu_lock);
    eo.copy_gbs = measure_copy_bandwidth(s.stream);
  }
  const auto pristine = task_fingerprints(b.graph, s.task, s.verifier, s.stream);
  out << json{{"ready", true}, {"gpu", device_name()}, {"copy_gbs", eo.copy_gbs}}.dump() << std::endl;

  std::shared_ptr<const GraphAnalysis> analysis;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json answer;
    GpuLock turn(gpu_lock);
    try {
      json job = json::parse(line);
      if (!job.is_object() || !job.contains("schedule") || !job["schedule"].is_object())
        throw UserError("a job is one JSON object with \"schedule\" (an object)");
      if (!analysis) analysis = analyze(b.graph, Target::here().facts());  // once for every schedule of the task (a failure: each job's)
      Plan plan = lower(*analysis, schedule_from_json(job["schedule"]));
      EvalResult r = evaluate(b.spec(), s.task, plan, s.compiler, s.verifier, eo, s.stream);
      answer = {{"ok", true}, {"result", r.to_json()}};
      answer["result"]["gpu"] = device_name();
    } catch (const json::exception& e) {
      answer = {{"ok", false}, {"error", std::string("job is not valid JSON: ") + e.what()}};
    } catch (const std::exception& e) {
      answer = {{"ok", false}, {"error", e.what()}};
    }
    CUresult health = driver().cuCtxSynchronize();
    if (health != CUDA_SUCCESS) {
      answer["worker_restart"] = "the CUDA context is broken (error " + std::to_string(int(health)) + ")";
    } else {
      try {
        if (task_fingerprints(b.graph, s.task, s.verifier, s.stream) != pristine)  // then this job's verdict is void too
          answer = {{"ok", false}, {"error", "the task's data on the device changed during the job (an out-of-bounds write?)"},
                    {"worker_restart", "the task's data changed"}};
      } catch (const std::exception& e) {
        answer["worker_restart"] = std::string("cannot check the task's data: ") + e.what();
      }
    }
    out << answer.dump() << std::endl;
    if (answer.contains("worker_restart")) return 3;
  }
  return 0;
}

}  // namespace kforge
