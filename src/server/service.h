// The environment as a service: tasks and jobs in SQLite (job_store.h), a bounded queue, and one worker
// per GPU. A candidate that crashes, hangs, exceeds its memory or corrupts its CUDA context takes down only
// its own sandboxed process (env/sandbox.h); the job is answered with the cause. Where each kind runs:
//   schedule  the built-in generator's plans are trusted: a persistent `kforge worker` per GPU
//             (plan_worker_process.h) keeps the task on the device, so a job costs milliseconds of overhead;
//   cuda      built by the compile pool (compile_pool.h) on the CPU cores while the GPU is busy with
//             earlier jobs, then run like a plan;
//   plan, modelnew  untrusted code: a fresh process in a minimal-root sandbox (`kforge run-candidate`, or
//             kforge.modelnew_candidate), its outputs judged here (env/judge.h).
// Untrusted code never shares a process with a later job (it could tamper with what that job is checked
// against) nor with its references. Every job of a task is also checked on sets drawn for its batch
// (drawn_sets: fresh from get_inputs, and beyond get_inputs' distribution).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "env/gpu_device.h"
#include "env/python_runtime.h"
#include "env/sandbox.h"
#include "server/compile_pool.h"
#include "server/device_memory.h"
#include "server/job_store.h"
#include "server/plan_worker_process.h"

namespace kforge {

struct ServiceOptions {
  std::string work_dir = "kforge_service";  // jobs.db, jobs/<id>/, tasks/<id>/
  int workers = 1;                          // one per GPU; 0 = accept and queue only
  int64_t max_queue = 256;                  // queued jobs beyond this are refused (429)
  size_t max_body = 8 << 20;                // request bytes (413 beyond)
  std::string kforge_exe;                   // the binary the sandboxed workers run
  std::string python_dir;                   // PYTHONPATH for imports of problem files
  SandboxOptions sandbox;                   // per job; scratch_dir is set to the job's folder
  // Evaluation processes per GPU: while one is checked and timed (they take turns, env/gpu_lock.h), the
  // others start, create their CUDA context and upload the task. The persistent worker is one of them.
  int slots_per_gpu = 2;
  int compile_workers = 2;                  // parallel nvcc builds of raw CUDA candidates (0 with workers = 0)
  double compile_timeout_s = 120;           // per build
  // Device memory the evaluation processes of one GPU may hold together (server/device_memory.h); 0: no
  // limit. `kforge serve` sets 90% of the GPU's memory.
  int64_t gpu_memory_bytes = 0;
  // Evaluations of a task checked against one draw of fresh sets (and sets beyond get_inputs' distribution,
  // python/kforge/drawn_sets.py) before the next is drawn; 0: the stored sets only.
  int drawn_every = 128;
  // Bundle and problem paths a request may name: inside this folder ("" and `paths_anywhere`: any path, a
  // service on one's own machine; "" otherwise: none, problems are uploaded as text).
  std::string data_root;
  bool paths_anywhere = true;
  int64_t max_queue_per_owner = 0;  // jobs waiting per caller (token) beyond which its new ones get 429; 0: none
  // Untrusted kinds (plan, cuda, modelnew) share the machine's limits with each other unless every job has a cgroup
  // of its own (sandbox.cgroup_parent): without one they are taken only when the operator says so.
  bool untrusted_allowed = true;
  // Untrusted jobs of evaluation slot i (over all GPUs) run as user id base + i, so that one job's processes do
  // not count against another's process limit (RLIMIT_NPROC is per user). 0: every job runs as sandbox.uid.
  // The persistent worker, the draws of fresh sets and the compile pool stay sandbox.uid.
  uint32_t sandbox_uid_base = 0;
};

class Service {
 public:
  explicit Service(ServiceOptions opts);
  ~Service();
  JobStore& store() { return store_; }
  const ServiceOptions& options() const { return opts_; }
  nlohmann::json health();
  // Imports a problem file (sandboxed: it is user code) into imports/ and registers it for `owner`.
  // `precision`: KernelBench's (fp32, fp16, bf16: Model, ModelNew and the float inputs cast to it); empty: the file's.
  TaskRecord import_problem(const std::string& problem_path, const std::string& owner = "", const std::string& precision = "");
  // The same for a problem uploaded as text (`name`: its file's stem).
  TaskRecord import_source(const std::string& name, const std::string& source, const std::string& owner = "",
                           const std::string& precision = "");
  TaskRecord register_bundle(const std::string& bundle_dir, const std::string& owner = "");
  // Queues a job; throws QueueFull when the queue, or `owner`'s share of it, is at its bound.
  int64_t submit(int64_t task_id, const std::string& kind, const std::string& payload, const std::string& owner = "");
  struct QueueFull : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

 private:
  void worker_loop(int gpu, int slot);
  // One draw of a task's sets (a folder under drawn/), removed when the last job checked against it is done.
  struct DrawnSets {
    std::filesystem::path folder;  // sets/ inside
    ~DrawnSets();
    std::string sets() const { return (folder / "sets").string(); }
  };
  // The task's current draw, drawn anew after opts_.drawn_every evaluations; nullptr when drawing is off.
  std::shared_ptr<const DrawnSets> drawn_sets(const TaskRecord& task, int gpu);
  struct TaskDraws {
    std::mutex mu;
    std::shared_ptr<const DrawnSets> current;
    int uses = 0, generation = 0;
    std::string failed;  // the last draw's failure, repeated to the task's jobs for a minute rather than redrawn
    std::chrono::steady_clock::time_point failed_at;
  };
  // The problem's own code (an import, a draw): a minimal root showing the system, Python, the kforge package and
  // `shown`, never the service's folder (jobs.db, other tasks, the GPU locks).
  SandboxOptions problem_sandbox(const std::filesystem::path& scratch_dir, const std::vector<std::string>& shown, int gpu);
  PythonRuntime python_runtime();
  // Slot 0's persistent worker, which keeps one task on the device between schedule jobs.
  struct PersistentWorker {
    std::unique_ptr<PlanWorkerProcess> process;
    int64_t task = -1;
    int64_t device_bytes = 0;  // held in the GPU's ledger while the process lives
    std::shared_ptr<const DrawnSets> drawn;  // the sets it checks beside the stored ones
  };
  void run_job(const Job& job, int gpu, int slot, PersistentWorker& worker);
  // A plan with its own sources, a built raw CUDA candidate or a ModelNew: its code in a sandboxed process of its
  // own, judged here (env/judge.h); finishes the job.
  void run_untrusted(const Job& job, const TaskRecord& task, int gpu, int slot, const std::filesystem::path& dir);
  double trusted_copy_gbs(const TaskRecord& task, int gpu);
  void add_python_env(SandboxOptions& o) const;  // after o.scratch_dir is set
  SandboxOptions job_sandbox(const std::filesystem::path& dir, const TaskRecord& task, int gpu) const;
  std::string gpu_lock(int gpu) const;
  static std::optional<GpuDevice> told_gpu(int gpu);
  void show_gpu(SandboxOptions& o, int gpu) const;  // only that GPU's device node, where it could be told
  std::string allowed_path(const std::string& path) const;  // resolved, and inside the data root; or UserError
  TaskRecord import_file(const std::string& problem_path, const std::string& owner, const std::string& precision);
  TaskRecord register_imported(const std::string& bundle_dir, const std::string& owner);

  ServiceOptions opts_;
  JobStore store_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> busy_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::filesystem::path cache_dir_;
  std::atomic<double> copy_gbs_{0};  // measured once by trusted code (a worker, or trusted_copy_gbs)
  std::mutex measure_mu_;
  std::string gpu_name_;  // with copy_gbs_, under measure_mu_
  PythonRuntime python_;  // a ModelNew's interpreter, found at the first such job (under measure_mu_)
  std::unique_ptr<CompilePool> compile_pool_;
  std::vector<std::unique_ptr<DeviceMemoryLedger>> device_memory_;  // per GPU
  std::vector<std::optional<GpuDevice>> gpu_devices_;                 // per GPU; nullopt: not told
  std::mutex draws_mu_;
  std::map<int64_t, std::unique_ptr<TaskDraws>> draws_;  // per task id
};

}  // namespace kforge
