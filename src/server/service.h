// The environment as a service: tasks and jobs in SQLite (job_store.h), a bounded queue, and one worker
// per GPU that runs each job as `kforge evaluate` in a sandbox (env/sandbox.h). A candidate that crashes,
// hangs or corrupts its CUDA context takes down only its own process; the job is answered with the cause.
#pragma once
#include <atomic>
#include <condition_variable>
#include <string>
#include <thread>
#include <vector>

#include "env/sandbox.h"
#include "server/job_store.h"

namespace kforge {

struct ServiceOptions {
  std::string work_dir = "kforge_service";  // jobs.db, jobs/<id>/, tasks/<id>/
  int workers = 1;                          // one per GPU; 0 = accept and queue only
  int64_t max_queue = 256;                  // queued jobs beyond this are refused (429)
  size_t max_body = 8 << 20;                // request bytes (413 beyond)
  std::string kforge_exe;                   // the binary the sandboxed workers run
  std::string python_dir;                   // PYTHONPATH for imports of problem files
  SandboxOptions sandbox;                   // per job; scratch_dir is set to the job's folder
};

class Service {
 public:
  explicit Service(ServiceOptions opts);
  ~Service();
  JobStore& store() { return store_; }
  const ServiceOptions& options() const { return opts_; }
  nlohmann::json health();
  // Imports a problem file (sandboxed: it is user code) into tasks/<n>/ and registers it.
  TaskRecord import_problem(const std::string& problem_path);
  TaskRecord register_bundle(const std::string& bundle_dir);
  // Queues a job; throws QueueFull when the queue is at its bound.
  int64_t submit(int64_t task_id, const std::string& kind, const std::string& payload);
  struct QueueFull : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

 private:
  void worker_loop();
  void run_job(const Job& job);

  ServiceOptions opts_;
  JobStore store_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> busy_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace kforge
