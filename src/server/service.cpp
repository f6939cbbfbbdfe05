#include "server/service.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "env/bundle.h"
#include "env/gpu_device.h"
#include "env/gpu_lock.h"
#include "env/judge.h"
#include "env/verify.h"
#include "ir/error.h"
#include "runtime/compiler.h"
#include "server/access.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {
std::string tail(const std::string& s, size_t n = 2000) { return s.size() > n ? s.substr(s.size() - n) : s; }

// A folder the sandbox user may write into (the sandbox drops to `nobody`).
fs::path scratch(const fs::path& p) {
  fs::create_directories(p);
  fs::permissions(p, fs::perms::all);
  return p;
}

// Copies of the kforge binary and Python package into the service folder where the sandbox user cannot reach
// them: a clone in a private folder (mode 0700, as `mktemp -d` or a home directory gives) keeps its build from
// that user, and the service folder is one it must reach anyway.
void stage_runtime(ServiceOptions& o) {
  fs::path runtime = fs::absolute(fs::path(o.work_dir) / "runtime");
  auto private_to_service = [&] {  // searchable by all, written by the service alone: trusted processes run from it
    fs::create_directories(runtime);
    fs::permissions(runtime, fs::perms(0755));
  };
  if (!o.kforge_exe.empty() && !reachable_by(o.sandbox.uid, o.kforge_exe)) {
    private_to_service();
    fs::copy_file(o.kforge_exe, runtime / "kforge", fs::copy_options::overwrite_existing);
    share_read_only((runtime / "kforge").string());
    o.kforge_exe = (runtime / "kforge").string();
  }
  if (!o.python_dir.empty() && fs::is_directory(fs::path(o.python_dir) / "kforge") && !reachable_by(o.sandbox.uid, o.python_dir)) {
    fs::path to = runtime / "python";
    private_to_service();
    fs::remove_all(to);
    fs::create_directories(to);
    fs::copy(fs::path(o.python_dir) / "kforge", to / "kforge", fs::copy_options::recursive);
    share_read_only(to.string());
    o.python_dir = to.string();
  }
}
}  // namespace

Service::Service(ServiceOptions opts) : opts_(std::move(opts)), store_((scratch(opts_.work_dir) / "jobs.db").string()) {
  signal(SIGPIPE, SIG_IGN);  // a worker that died mid-job is a failed write, not the service's end
  stage_runtime(opts_);
  // The sandbox's /tmp is private: the kforge binary and the Python bridge stay visible wherever they live.
  for (const std::string& p : {fs::path(opts_.kforge_exe).parent_path().string(), opts_.python_dir})
    if (!p.empty() && fs::exists(p)) opts_.sandbox.read_only.push_back(p);
  // Jobs write into jobs/<id>/ as the sandbox user: fail at start, not on every job, when it cannot.
  SandboxOptions o = opts_.sandbox;
  o.timeout_s = 30;
  o.scratch_dir = scratch(fs::absolute(fs::path(opts_.work_dir) / "jobs")).string();
  SandboxResult r = run_sandboxed({"true"}, o);
  if (!r.ok())
    throw UserError("service folder " + o.scratch_dir + " is not reachable by the sandbox user (uid " +
                    std::to_string(o.uid) + "): make the folders above it searchable (" + tail(r.err, 300) + ")");
  // Caches. nvrtc/: kernels of trusted code (the verifier, the generator's plans), written by the service
  // and the persistent workers only; fresh processes of untrusted candidates see it read-only. raw/: the
  // compile pool's shared objects, each folder handed to the sandbox user for its build only.
  cache_dir_ = fs::absolute(fs::path(opts_.work_dir) / "cache");
  scratch(cache_dir_ / "nvrtc");
  fs::create_directories(cache_dir_ / "raw");
  try {  // the verifier every evaluation loads: compiled once here, not once per fresh process
    Compiler({.cache_dir = (cache_dir_ / "nvrtc").string()}).compile(verification_source(), "kf_compare");
  } catch (const std::exception&) {  // no NVRTC: each process compiles it itself
  }
  for (int gpu = 0; gpu < opts_.workers; ++gpu) {
    device_memory_.push_back(std::make_unique<DeviceMemoryLedger>(opts_.gpu_memory_bytes));
    gpu_devices_.push_back(told_gpu(gpu));
  }
  for (int gpu = 0; gpu < opts_.workers; ++gpu) {
    std::ofstream(gpu_lock(gpu)).flush();  // readable by the sandbox user: flock needs no more
    for (int slot = 0; slot < std::max(1, opts_.slots_per_gpu); ++slot)
      threads_.emplace_back([this, gpu, slot] { worker_loop(gpu, slot); });
  }
  if (opts_.workers > 0 && opts_.compile_workers > 0) {
    RawCudaOptions build;
    build.cache_dir = (cache_dir_ / "raw").string();
    build.timeout_s = opts_.compile_timeout_s;
    build.sandbox = opts_.sandbox;
    build.sandbox.gpu = false;  // nvcc needs no device
    // nvcc of untrusted source: an #include of a bundle's reference or the job database must find nothing.
    build.sandbox.minimal_root = true;
    compile_pool_ = std::make_unique<CompilePool>(store_, build, opts_.compile_workers, [this] { cv_.notify_one(); });
  }
}

// Each GPU's device node, told once: a job's sandbox then shows its own GPU's node alone (env/gpu_device.h).
// Where it cannot be told (no driver here, a driver without /proc/driver/nvidia), every node is shown and the
// GPU is chosen by number only: said at start.
std::optional<GpuDevice> Service::told_gpu(int gpu) {
  try {
    GpuDevice d = gpu_device(gpu);
    SandboxOptions probe;
    show_only(probe, d);
    std::cerr << "kforge serve: GPU " << gpu << "'s jobs see its device node alone (/dev/nvidia" << d.minor << ", " << d.uuid << ")" << std::endl;
    return d;
  } catch (const std::exception& e) {
    std::cerr << "kforge serve: GPU " << gpu << "'s jobs see every GPU device node: " << e.what() << std::endl;
    return std::nullopt;
  }
}

void Service::show_gpu(SandboxOptions& o, int gpu) const {
  if (size_t(gpu) < gpu_devices_.size() && gpu_devices_[size_t(gpu)]) show_only(o, *gpu_devices_[size_t(gpu)]);
  else if (opts_.workers > 1) o.env.push_back({"CUDA_VISIBLE_DEVICES", std::to_string(gpu)});
}

Service::~Service() {
  stopping_ = true;
  cv_.notify_all();
  compile_pool_.reset();
  for (auto& t : threads_) t.join();
}

nlohmann::json Service::health() {
  return {{"status", "ok"}, {"workers", opts_.workers}, {"busy", busy_.load()}, {"queued", store_.count("queued")},
          {"running", store_.count("running")},
          {"compiling", store_.count("compiling")}, {"compiled", store_.count("compiled")}, {"done", store_.count("done")}, {"failed", store_.count("failed")},
          {"max_queue", opts_.max_queue}, {"requeued_on_start", store_.requeued_on_open()}};
}

std::string Service::allowed_path(const std::string& path) const {
  if (opts_.data_root.empty() && !opts_.paths_anywhere)
    throw UserError("this service takes no paths on its disk (no --data-root): upload the problem as \"problem_source\"");
  return resolved_within(opts_.data_root, path);
}

TaskRecord Service::register_bundle(const std::string& bundle_path, const std::string& owner) {
  return register_imported(allowed_path(bundle_path), owner);
}

TaskRecord Service::import_source(const std::string& name, const std::string& source, const std::string& owner,
                                  const std::string& precision) {
  bool plain = !name.empty() && name.size() <= 100 &&
               name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
  if (!plain) throw UserError("\"name\" must be 1-100 letters, digits, '_' or '-'");
  char tmpl[] = "upload-XXXXXX";
  fs::path uploads = scratch(fs::absolute(fs::path(opts_.work_dir) / "uploads"));
  std::string dir = (uploads / tmpl).string();
  if (!mkdtemp(dir.data())) throw UserError("cannot make a folder for the upload");
  fs::permissions(dir, fs::perms(0755));
  fs::path file = fs::path(dir) / (name + ".py");
  std::ofstream(file) << source;
  return import_file(file.string(), owner, precision);
}

TaskRecord Service::import_problem(const std::string& problem_path, const std::string& owner, const std::string& precision) {
  return import_file(allowed_path(problem_path), owner, precision);
}

TaskRecord Service::import_file(const std::string& problem_path, const std::string& owner, const std::string& precision) {
  if (!precision.empty() && precision != "fp32" && precision != "fp16" && precision != "bf16")
    throw UserError("\"precision\" must be fp32, fp16 or bf16, not '" + precision + "'");
  if (!fs::is_regular_file(problem_path)) throw UserError("problem file " + problem_path + " does not exist");
  // The task's name as python/kforge/problem.py's task_name makes it: one problem's precisions keep apart.
  std::string name = fs::path(problem_path).stem().string() + (precision.empty() || precision == "fp32" ? "" : "_" + precision);
  // A folder of this import's own: a task's bundle is never replaced by a later import of the same name.
  std::string made = (scratch(fs::absolute(fs::path(opts_.work_dir) / "imports")) / (name + "-XXXXXX")).string();
  if (!mkdtemp(made.data())) throw UserError("cannot make a folder for importing " + problem_path);
  fs::path dir = scratch(made);
  fs::path out = dir / name;
  SandboxOptions o = problem_sandbox(fs::absolute(dir), {fs::absolute(fs::path(problem_path).parent_path()).string()}, 0);
  GpuLock turn(opts_.workers > 0 ? gpu_lock(0) : "");  // it times the baselines: not beside another's timing
  std::vector<std::string> argv = {python_runtime().exe, "-m", "kforge.bridge", "import", fs::absolute(problem_path).string(),
                                   "-o", (fs::absolute(out)).string()};
  if (!precision.empty()) argv.insert(argv.end(), {"--precision", precision});
  SandboxResult r = run_sandboxed(argv, o);
  if (!r.ok()) throw UserError("importing " + problem_path + " failed (" + r.cause() + "):\n" + tail(r.err));
  return register_imported(out.string(), owner);
}

TaskRecord Service::register_imported(const std::string& bundle_dir, const std::string& owner) {
  Bundle b = load_bundle(bundle_dir);  // throws UserError naming what is wrong
  std::string dir = fs::absolute(bundle_dir).string();
  // Jobs read the bundle as the sandbox user: refuse now what every job would fail on later.
  SandboxOptions o = opts_.sandbox;
  o.timeout_s = 30;
  o.read_only.push_back(dir);
  SandboxResult r = run_sandboxed({"test", "-r", dir + "/task.json"}, o);
  if (!r.ok())
    throw UserError("bundle " + dir + " is not readable by the sandbox user (uid " + std::to_string(o.uid) +
                    "): make it and the folders above it readable and searchable" + (r.err.empty() ? "" : " (" + tail(r.err, 300) + ")"));
  return {store_.add_task(b.name(), dir, owner), b.name(), dir, owner};
}

int64_t Service::submit(int64_t task_id, const std::string& kind, const std::string& payload, const std::string& owner) {
  if (store_.count("queued") + store_.count("compiling") + store_.count("compiled") >= opts_.max_queue)
    throw QueueFull("the queue holds " + std::to_string(opts_.max_queue) + " jobs; retry later");
  if (opts_.max_queue_per_owner > 0 && store_.waiting(owner) >= opts_.max_queue_per_owner)
    throw QueueFull("your jobs waiting in the queue are at this service's bound (" + std::to_string(opts_.max_queue_per_owner) +
                    "); retry later");
  int64_t id = store_.submit(task_id, kind, payload, owner);
  cv_.notify_one();
  return id;
}

std::string Service::gpu_lock(int gpu) const { return (cache_dir_ / ("gpu" + std::to_string(gpu) + ".lock")).string(); }

// Python in a sandbox: kforge's modules, and a HOME in the job's own folder. The user's HOME is read-only
// there (and not the sandbox user's), yet torch.compile writes its Triton and Inductor caches under it.
void Service::add_python_env(SandboxOptions& o) const {
  o.env.push_back({"PYTHONPATH", opts_.python_dir});
  o.env.push_back({"HOME", o.scratch_dir});
  o.env.push_back({"TRITON_CACHE_DIR", o.scratch_dir + "/.triton"});
  o.env.push_back({"TORCHINDUCTOR_CACHE_DIR", o.scratch_dir + "/.inductor"});
}

void Service::worker_loop(int gpu, int slot) {
  PersistentWorker worker;
  while (!stopping_) {
    std::optional<Job> job = store_.claim(slot == 0);
    if (!job) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      continue;
    }
    ++busy_;
    try {
      run_job(*job, gpu, slot, worker);
    } catch (const std::exception& e) {  // the service outlives any job
      store_.finish(job->id, false, "", std::string("worker error: ") + e.what());
    }
    --busy_;
  }
}

PythonRuntime Service::python_runtime() {
  std::lock_guard<std::mutex> lock(measure_mu_);
  if (python_.kforge_dir.empty()) python_ = find_python(opts_.python_dir);  // once: it runs the interpreter
  return python_;
}

SandboxOptions Service::problem_sandbox(const fs::path& scratch_dir, const std::vector<std::string>& shown, int gpu) {
  SandboxOptions o = opts_.sandbox;
  o.read_only.clear();
  o.minimal_root = true;
  o.scratch_dir = scratch_dir.string();
  PythonRuntime py = python_runtime();
  o.read_only.insert(o.read_only.end(), py.roots.begin(), py.roots.end());
  o.read_only.push_back(opts_.python_dir);
  o.read_only.insert(o.read_only.end(), shown.begin(), shown.end());
  add_python_env(o);
  show_gpu(o, gpu);
  return o;
}

SandboxOptions Service::job_sandbox(const fs::path& dir, const TaskRecord& task, int gpu) const {
  SandboxOptions o = opts_.sandbox;
  o.scratch_dir = dir.string();
  o.read_only.push_back(task.bundle_dir);
  o.read_only.push_back(cache_dir_.string());
  o.env.push_back({"KFORGE_CACHE", (cache_dir_ / "nvrtc").string()});
  add_python_env(o);
  show_gpu(o, gpu);
  return o;
}

Service::DrawnSets::~DrawnSets() {
  std::error_code ignored;
  fs::remove_all(folder, ignored);
}

std::shared_ptr<const Service::DrawnSets> Service::drawn_sets(const TaskRecord& task, int gpu) {
  if (opts_.drawn_every <= 0) return nullptr;
  TaskDraws* draws;
  {
    std::lock_guard<std::mutex> lock(draws_mu_);
    auto& d = draws_[task.id];
    if (!d) d = std::make_unique<TaskDraws>();
    draws = d.get();
  }
  std::lock_guard<std::mutex> lock(draws->mu);  // one draw at a time per task; other tasks go on
  if (draws->current && draws->uses < opts_.drawn_every) {
    ++draws->uses;
    return draws->current;
  }
  if (!draws->failed.empty() && std::chrono::steady_clock::now() - draws->failed_at < std::chrono::minutes(1))
    throw UserError(draws->failed);
  // The problem's code draws and computes the references: user code, so sandboxed like an import, writing into
  // a folder of its own. No candidate's sandbox shows it (they bind the inputs alone); the persistent worker,
  // trusted code running as the sandbox user, reads the references.
  auto fresh = std::make_shared<DrawnSets>();
  fresh->folder = scratch(fs::absolute(fs::path(opts_.work_dir) / "drawn" /
                                       (std::to_string(task.id) + "-" + std::to_string(++draws->generation))));
  SandboxOptions o = problem_sandbox(fresh->folder, {task.bundle_dir}, gpu);
  o.timeout_s = std::max(o.timeout_s, 600.0);
  DeviceMemoryReservation reserved(*device_memory_.at(gpu), task_device_bytes(load_bundle(task.bundle_dir)));
  SandboxResult r;
  {
    GpuLock turn(gpu_lock(gpu));  // its references run on the GPU: not beside another's timing
    r = run_sandboxed({python_runtime().exe, "-m", "kforge.drawn_sets", task.bundle_dir, fresh->sets()}, o);
  }
  if (!r.ok()) {
    draws->failed = "drawing fresh input sets for task " + std::to_string(task.id) + " failed (" + r.cause() + "):\n" + tail(r.err);
    draws->failed_at = std::chrono::steady_clock::now();
    throw UserError(draws->failed);
  }
  draws->failed.clear();
  fs::permissions(fresh->folder, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  draws->current = fresh;
  draws->uses = 1;
  return fresh;
}

void Service::run_job(const Job& job, int gpu, int slot, PersistentWorker& worker) {
  auto task = store_.task(job.task_id);
  if (!task) {
    store_.finish(job.id, false, "", "task " + std::to_string(job.task_id) + " no longer exists");
    return;
  }
  DeviceMemoryLedger& memory = *device_memory_.at(gpu);
  // Read from the bundle only where a process is about to upload it: not on a persistent worker's every job.
  if (job.kind != "schedule") {
    fs::path dir = scratch(fs::absolute(fs::path(opts_.work_dir) / "jobs" / std::to_string(job.id)));
    return run_untrusted(job, *task, gpu, slot, dir);
  }
  std::shared_ptr<const DrawnSets> drawn = drawn_sets(*task, gpu);
  // One task on the device at a time, with one draw of its sets: a new draw reloads it.
  if (!worker.process || worker.task != task->id || worker.drawn != drawn) {
    worker.process.reset();
    memory.let_go(worker.device_bytes);
    worker.drawn = drawn;
    Bundle b = load_bundle(task->bundle_dir);
    if (drawn) add_drawn_sets(b, drawn->sets());
    worker.device_bytes = task_device_bytes(b);
    memory.hold(worker.device_bytes);  // before the process starts uploading
    SandboxOptions o = job_sandbox(cache_dir_ / "nvrtc", *task, gpu);  // trusted: may fill the kernel cache
    std::vector<std::string> argv{opts_.kforge_exe, "worker", task->bundle_dir, "--gpu-lock", gpu_lock(gpu)};
    if (drawn) {
      o.read_only.push_back(drawn->folder.string());
      argv.insert(argv.end(), {"--drawn", drawn->sets()});
    }
    worker.process = std::make_unique<PlanWorkerProcess>(argv, o);
    worker.task = task->id;
  }
  PlanWorkerProcess::Answer a = worker.process->evaluate({{"schedule", nlohmann::json::parse(job.payload)}});
  if (copy_gbs_ == 0) copy_gbs_ = worker.process->copy_gbs();
  if (a.ok) store_.finish(job.id, true, a.result.dump(), "");
  else store_.finish(job.id, false, "", "evaluation failed: " + a.error);
}

// The GPU's copy bandwidth sets the roofline floor below which a time is not paid: measured by trusted code (the
// persistent worker, or this once), never by a candidate's process.
double Service::trusted_copy_gbs(const TaskRecord& task, int gpu) {
  std::lock_guard<std::mutex> lock(measure_mu_);
  if (copy_gbs_ > 0 && !gpu_name_.empty()) return copy_gbs_;
  SandboxOptions o = job_sandbox(cache_dir_ / "nvrtc", task, gpu);
  o.timeout_s = 120;
  SandboxResult r = run_sandboxed({opts_.kforge_exe, "copy-bandwidth"}, o);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (r.ok() && j.is_object()) copy_gbs_ = j.value("copy_gbs", 0.0), gpu_name_ = j.value("gpu", std::string());
  return copy_gbs_;
}

void Service::run_untrusted(const Job& job, const TaskRecord& task, int gpu, int slot, const fs::path& dir) {
  std::string path;
  CandidateKind kind;
  if (job.kind == "plan") {
    kind = CandidateKind::plan;
    path = (dir / "plan.json").string();
    std::ofstream(path) << job.payload;
  } else if (job.kind == "cuda") {
    kind = CandidateKind::shared_object;
    path = job.artifact;
    if (!fs::exists(path)) {  // the cache was cleared under a compiled job: build it again
      store_.requeue(job.id);
      return;
    }
  } else if (job.kind == "modelnew") {
    kind = CandidateKind::modelnew;
    path = (dir / "model_new.py").string();
    std::ofstream(path) << nlohmann::json::parse(job.payload).value("source", "");
  } else {
    store_.finish(job.id, false, "", "unknown job kind '" + job.kind + "'");
    return;
  }
  UntrustedRunOptions u;
  u.sandbox = opts_.sandbox;
  if (opts_.sandbox_uid_base > 0) u.sandbox.uid = opts_.sandbox_uid_base + uint32_t(gpu * std::max(1, opts_.slots_per_gpu) + slot);
  if (kind == CandidateKind::modelnew) {
    u.rules = nlohmann::json::parse(job.payload).value("rules", "none");
    u.python = python_runtime();
  }
  u.sandbox.scratch_dir = dir.string();
  show_gpu(u.sandbox, gpu);
  u.kforge_exe = opts_.kforge_exe;
  u.gpu_lock = gpu_lock(gpu);
  u.trusted_cache_dir = (cache_dir_ / "nvrtc").string();
  u.torch_pch_dir = (cache_dir_ / "torch_pch").string();
  EvalOptions eo;
  eo.copy_gbs = trusted_copy_gbs(task, gpu);
  std::string gpu_name;
  {
    std::lock_guard<std::mutex> lock(measure_mu_);
    gpu_name = gpu_name_;
  }
  std::shared_ptr<const DrawnSets> drawn = drawn_sets(task, gpu);
  Bundle b = load_bundle(task.bundle_dir);
  if (drawn) add_drawn_sets(b, drawn->sets());
  DeviceMemoryReservation reserved(*device_memory_.at(gpu), task_device_bytes(b));
  EvalResult r = evaluate_untrusted(b, kind, path, eo, u);
  nlohmann::json j = r.to_json();
  j["gpu"] = gpu_name;
  j["copy_gbs"] = eo.copy_gbs;
  store_.finish(job.id, true, j.dump(), "");
}

}  // namespace kforge
