// The service's side of `kforge worker` (env/plan_worker.h): one sandboxed worker process for one task,
// started on first use and started again after it dies, runs past the job's time limit, exceeds its
// memory, or reports a spoiled CUDA context. Whatever happens, the job gets an answer naming the cause.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "env/sandbox.h"

namespace kforge {

class PlanWorkerProcess {
 public:
  // `argv` starts the worker; `sandbox.timeout_s` is each job's limit, `startup_s` the limit for loading
  // the task onto the device.
  PlanWorkerProcess(std::vector<std::string> argv, SandboxOptions sandbox, double startup_s = 300);
  ~PlanWorkerProcess();
  PlanWorkerProcess(const PlanWorkerProcess&) = delete;
  PlanWorkerProcess& operator=(const PlanWorkerProcess&) = delete;

  struct Answer {
    bool ok = false;
    nlohmann::json result;  // EvalResult JSON when ok
    std::string error;
  };
  Answer evaluate(const nlohmann::json& job);
  double copy_gbs() const { return copy_gbs_; }  // from the worker's ready line; 0 before
  int starts() const { return starts_; }

 private:
  bool start(std::string& why);
  void stop();
  // The next line the worker writes, or "" with `why` set (the process is then stopped).
  std::string read_line(double timeout_s, std::string& why);
  std::string died(const std::string& what);

  std::vector<std::string> argv_;
  SandboxOptions o_;
  double startup_s_;
  SandboxedProcess p_;
  SandboxResult io_;  // the streams' text not yet consumed, and how the process ended
  double copy_gbs_ = 0;
  int starts_ = 0;
};

}  // namespace kforge
