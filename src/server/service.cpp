#include "server/service.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "env/bundle.h"
#include "ir/error.h"

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
}  // namespace

Service::Service(ServiceOptions opts) : opts_(std::move(opts)), store_((scratch(opts_.work_dir) / "jobs.db").string()) {
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
  for (int i = 0; i < opts_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
}

Service::~Service() {
  stopping_ = true;
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

nlohmann::json Service::health() {
  return {{"status", "ok"}, {"workers", opts_.workers}, {"busy", busy_.load()}, {"queued", store_.count("queued")},
          {"running", store_.count("running")}, {"done", store_.count("done")}, {"failed", store_.count("failed")},
          {"max_queue", opts_.max_queue}, {"requeued_on_start", store_.requeued_on_open()}};
}

TaskRecord Service::register_bundle(const std::string& bundle_dir) {
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
  return {store_.add_task(b.name(), dir), b.name(), dir};
}

TaskRecord Service::import_problem(const std::string& problem_path) {
  if (!fs::is_regular_file(problem_path)) throw UserError("problem file " + problem_path + " does not exist");
  std::string name = fs::path(problem_path).stem().string();
  fs::path dir = scratch(fs::path(opts_.work_dir) / "imports" / (name + "-" + std::to_string(std::hash<std::string>{}(problem_path) % 100000)));
  fs::path out = dir / name;
  fs::remove_all(out);
  SandboxOptions o = opts_.sandbox;
  o.scratch_dir = fs::absolute(dir).string();
  o.read_only.push_back(fs::absolute(fs::path(problem_path).parent_path()).string());
  o.env.push_back({"PYTHONPATH", opts_.python_dir});
  SandboxResult r = run_sandboxed({"python3", "-m", "kforge.bridge", "import", fs::absolute(problem_path).string(),
                                   "-o", (fs::absolute(out)).string()}, o);
  if (!r.ok()) throw UserError("importing " + problem_path + " failed (" + r.cause() + "):\n" + tail(r.err));
  return register_bundle(out.string());
}

int64_t Service::submit(int64_t task_id, const std::string& kind, const std::string& payload) {
  if (store_.count("queued") >= opts_.max_queue)
    throw QueueFull("the queue holds " + std::to_string(opts_.max_queue) + " jobs; retry later");
  int64_t id = store_.submit(task_id, kind, payload);
  cv_.notify_one();
  return id;
}

void Service::worker_loop() {
  while (!stopping_) {
    std::optional<Job> job = store_.claim();
    if (!job) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(500));
      continue;
    }
    ++busy_;
    try {
      run_job(*job);
    } catch (const std::exception& e) {  // the service outlives any job
      store_.finish(job->id, false, "", std::string("worker error: ") + e.what());
    }
    --busy_;
  }
}

void Service::run_job(const Job& job) {
  auto task = store_.task(job.task_id);
  if (!task) {
    store_.finish(job.id, false, "", "task " + std::to_string(job.task_id) + " no longer exists");
    return;
  }
  fs::path dir = scratch(fs::absolute(fs::path(opts_.work_dir) / "jobs" / std::to_string(job.id)));
  fs::path input = dir / (job.kind + ".json"), result = dir / "result.json";
  std::ofstream(input) << job.payload;
  auto payload = nlohmann::json::parse(job.payload);
  std::vector<std::string> extra;
  if (job.kind == "cuda" || job.kind == "modelnew") {  // the payload carries the source file's text
    input = dir / (job.kind == "cuda" ? "candidate.cu" : "candidate.py");
    std::ofstream(input) << payload.value("source", "");
    if (job.kind == "modelnew") extra = {"--rules", payload.value("rules", "none")};
  }
  fs::remove(result);
  SandboxOptions o = opts_.sandbox;
  o.scratch_dir = dir.string();
  o.read_only.push_back(task->bundle_dir);
  o.env.push_back({"KFORGE_CACHE", (dir / "cache").string()});  // per job: no candidate can poison another's cache
  std::vector<std::string> argv = {opts_.kforge_exe, "evaluate", task->bundle_dir, "--" + job.kind, input.string(),
                                   "-o", result.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  o.env.push_back({"PYTHONPATH", opts_.python_dir});
  SandboxResult r = run_sandboxed(argv, o);
  std::ifstream in(result);
  if (r.timed_out || !in) {
    store_.finish(job.id, false, "", "evaluation " + r.cause() + (r.err.empty() ? "" : ":\n" + tail(r.err)));
    return;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = nlohmann::json::parse(ss.str(), nullptr, false);
  if (parsed.is_discarded()) store_.finish(job.id, false, "", "evaluation wrote an unreadable result (" + r.cause() + ")");
  else store_.finish(job.id, true, parsed.dump(), "");
}

}  // namespace kforge
