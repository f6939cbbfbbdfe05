// The kforge command. A thin front end: argument parsing, the Python bridge where PyTorch must run
// (import, kb-protocol timing, export), and printing. The work is in libkforge.
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "codegen/lower.h"
#include "env/bundle.h"
#include "env/gpu_lock.h"
#include "env/candidate_runner.h"
#include "env/gpu_device.h"
#include "env/judge.h"
#include "env/plan_worker.h"
#include "env/python_runtime.h"
#include "ir/error.h"
#include "runtime/compiler.h"
#include "runtime/crash_trace.h"
#include "runtime/driver.h"
#include "runtime/target.h"
#include "env/raw_cuda.h"
#include "search/cost_model.h"
#include "search/cost_model_training.h"
#include "search/features.h"
#include "search/optimize.h"
#ifdef KFORGE_HAVE_SERVER
#include "server/serve_command.h"
#endif

using namespace kforge;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `python3 -m kforge.<module> args...` with the repository's python/ on PYTHONPATH; returns its exit code.
// `timeout_s` > 0: killed after that many seconds (a problem's code that hangs), exit 137.
int python_status(const std::string& module, const std::vector<std::string>& args, double timeout_s = 0) {
  const char* py = std::getenv("KFORGE_PYTHON");
  std::string cmd = "PYTHONPATH=" + quote(kforge_python_dir(KFORGE_PYTHON_DIR)) + "${PYTHONPATH:+:$PYTHONPATH} " +
                    (timeout_s > 0 ? "timeout --signal=KILL " + std::to_string(int(timeout_s)) + " " : "") +
                    (py ? std::string(py) : "python3") + " -m kforge." + module;
  for (auto& a : args) cmd += " " + quote(a);
  int rc = std::system(cmd.c_str());
  if (rc == -1) return 127;
  return WIFSIGNALED(rc) ? 128 + WTERMSIG(rc) : WEXITSTATUS(rc);  // a crash reads as the shell would say it
}

// The same, for steps that must succeed.
void run_python(const std::string& module, const std::vector<std::string>& args, double timeout_s = 0) {
  const auto start = std::chrono::steady_clock::now();
  int rc = python_status(module, args, timeout_s);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // SIGKILL is the time limit's only where the limit had passed: the kernel's out-of-memory killer sends it too.
  if (timeout_s > 0 && rc == 137 && took >= timeout_s)
    throw UserError("kforge." + module + " did not finish within " + std::to_string(int(timeout_s)) +
                    " s (the problem's code hangs, or --timeout is too short for it)");
  if (rc == 137)
    throw UserError("kforge." + module + " was killed after " + std::to_string(int(took)) +
                    " s (SIGKILL: the host's memory ran out, likely; see dmesg)");
  if (rc != 0) throw UserError("kforge." + module + " failed (exit " + std::to_string(rc) + "); see its message above");
}

Graph load_graph(const std::string& path) {
  if (fs::is_directory(path)) return load_bundle(path).graph;
  try {
    auto j = nlohmann::json::parse(read_file(path));
    return graph_from_json(j.contains("graph") ? j["graph"] : j);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + " is not valid JSON: " + e.what());
  }
}

void write_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << j.dump(2) << "\n";
}

struct OptimizeArgs {
  std::string problem, bundle, db = "kforge.db", report, export_path, precision;
  int budget = 32, sets = 5;
  uint64_t seed = 1;
  bool no_progress = false;
  std::string policy = "trained", cost_model, checkpoint;
};

// PyTorch hosts the loop in one process (python/kforge/session.py); the search is libkforge's. The hidden
// sets stay on the GPU and the baselines are timed beside the plan (kb protocol).
int cmd_optimize(const OptimizeArgs& a) {
  std::string name = fs::path(a.problem).stem().string();
  bool bundle = fs::is_directory(a.problem);
  std::string bundle_dir = bundle ? a.problem : a.bundle.empty() ? "kforge_out/" + name : a.bundle;
  if (!bundle && fs::path(bundle_dir).filename() != name)
    throw UserError("--bundle must end in the problem's name ('" + name + "'), got " + bundle_dir);
  std::string workdir = fs::path(bundle_dir).parent_path().string();
  std::vector<std::string> args = {a.problem, "--budget", std::to_string(a.budget), "--db", a.db,
                                   "--workdir", workdir.empty() ? "." : workdir, "--sets", std::to_string(a.sets),
                                   "--seed", std::to_string(a.seed)};
  if (!a.report.empty()) args.insert(args.end(), {"--report", a.report});
  if (a.no_progress) args.push_back("--no-progress");
  if (!a.precision.empty()) args.insert(args.end(), {"--precision", a.precision});
  args.insert(args.end(), {"--policy", a.policy});
  if (!a.cost_model.empty()) args.insert(args.end(), {"--cost-model", fs::absolute(a.cost_model).string()});
  if (!a.checkpoint.empty()) args.insert(args.end(), {"--checkpoint", fs::absolute(a.checkpoint).string()});
  run_python("session", args);
  if (!a.export_path.empty()) run_python("export", {bundle_dir, bundle_dir + "/best_plan.json", "-o", a.export_path});
  return 0;
}

// Fits the cost model to every correct measurement of the database, holding out whole tasks to report how
// well it ranks candidates of tasks it has not seen.
int cmd_train_costmodel(const std::string& db_path, const std::string& out, const std::string& gpu, int folds,
                        const std::string& objective) {
  MeasurementDB db(db_path);
  auto rows = db.training_rows(gpu);
  if (rows.size() < 10) throw UserError(db_path + " has " + std::to_string(rows.size()) + " usable measurements; measure more first (kforge optimize)");
  if (objective != "pairwise" && objective != "regression") throw UserError("--objective must be pairwise or regression, not '" + objective + "'");
  TrainOptions opts{.objective = objective == "pairwise" ? CostObjective::pairwise : CostObjective::regression};
  std::vector<CostSample> samples = cost_samples(rows);
  std::set<std::string> tasks;
  for (auto& s : samples) tasks.insert(s.task);
  if (folds > 1 && int(tasks.size()) < folds) {
    std::printf("no cross-validation: %zu tasks, fewer than --folds %d\n", tasks.size(), folds);
  } else if (folds > 1) {
    CostModelScore cv = cross_validate(samples, folds, opts);
    std::printf("%d-fold cross-validation by task (%s objective), %d tasks: rank correlation within a task %.3f\n", folds,
                objective.c_str(), cv.tasks, cv.rank_correlation);
    if (cv.top_k_tasks)
      std::printf("best of the first %d candidates over each task's best measured plan (mean over %d tasks with more than "
                  "%d plans): the model's top %.3f, search order (half random) %.3f, random %.3f\n",
                  cv.k, cv.top_k_tasks, 2 * cv.k, cv.top_k_fraction, cv.search_k_fraction, cv.random_k_fraction);
    else
      std::printf("best of the first %d candidates: n/a (no task has more than %d measured plans)\n", cv.k, 2 * cv.k);
  }
  save_cost_model(*train_cost_model(samples, opts), out);  // the saved model learns from every task
  std::printf("trained on %zu distinct plans (%zu measurements) of %zu tasks -> %s\n", samples.size(), rows.size(),
              tasks.size(), out.c_str());
  return 0;
}

struct EvaluateArgs {
  std::string bundle, plan, schedule, cuda, so, modelnew, out, gpu_lock, drawn;
  std::string rules = "none", device = "cuda", sandbox_user = "nobody";
  bool no_fresh = false;
  double copy_gbs = 0;  // measured by the caller already (the service's worker); 0 = measure here
  double timeout_s = 600;
};

// The evaluation's answer, written by this (trusted) process only: to stdout, or to a file that must not be a
// link (a candidate never sees this process's folders, yet the path is the caller's).
void write_result(const std::string& out, const nlohmann::json& j) {
  if (out.empty()) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError("cannot write " + out + ": " + std::strerror(errno) + " (a symbolic link is refused)");
  std::string text = j.dump(2) + "\n";
  bool ok = write(fd, text.data(), text.size()) == ssize_t(text.size());
  close(fd);
  if (!ok) throw UserError("cannot write " + out);
}

// A folder of the candidate's own, handed to the sandbox user (the sandbox drops root to it).
std::string candidate_scratch(const SandboxOptions& o) {
  char tmpl[] = "/tmp/kforge-candidate-XXXXXX";
  if (!mkdtemp(tmpl)) throw UserError(std::string("cannot make a scratch folder: ") + std::strerror(errno));
  if (geteuid() == 0 && o.uid != 0 && chown(tmpl, o.uid, o.gid) != 0)
    throw UserError(std::string("cannot hand ") + tmpl + " to the sandbox user: " + std::strerror(errno));
  return tmpl;
}

// nvcc on an untrusted raw CUDA file (an agent's `compile` tool), as the service builds one: in the bubblewrap
// sandbox with a minimal root, as the sandbox user, so that an #include of a host file finds nothing to echo back.
// Prints {"ok", "log", "millis"}; exit 0 when it built.
int cmd_build_cuda(const std::string& path, const std::string& arch, const std::string& sandbox_user, double timeout_s) {
  RawCudaOptions build;
  build.timeout_s = timeout_s;
  if (!arch.empty()) build.flags = {"-O3", "-arch=" + arch, "-shared", "-Xcompiler", "-fPIC"};
  build.sandbox = SandboxOptions{};
  build.sandbox.minimal_root = true;
  build.sandbox.memory_bytes = 16LL << 30;  // nvcc's front end can need several GiB on big templates
  run_as(build.sandbox, sandbox_user);
  build.cache_dir = candidate_scratch(build.sandbox);  // this build's own: nothing of another's is found
  RawCudaBuild b = build_raw_cuda(read_file(path), build);
  std::cout << nlohmann::json{{"ok", b.ok}, {"log", b.log}, {"millis", b.millis}}.dump() << "\n";
  std::error_code ignored;
  fs::remove_all(build.cache_dir, ignored);
  return b.ok ? 0 : 1;
}

// The device-to-device copy bandwidth, measured in this (trusted) process on a stream of its own.
double copy_bandwidth_here() {
  ensure_context();
  CUstream stream = nullptr;
  KF_CU(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  double gbs = measure_copy_bandwidth(stream);
  driver().cuStreamDestroy(stream);
  return gbs;
}

// Sets drawn for this evaluation (python/kforge/drawn_sets.py) into a folder of this process's own: inputs
// readable by the sandbox user, references by this user only. Removed when it goes out of scope.
struct DrawnHere {
  std::string dir;
  DrawnHere(const std::string& bundle, const std::string& device) {
    char tmpl[] = "/tmp/kforge-drawn-XXXXXX";
    if (!mkdtemp(tmpl)) throw UserError(std::string("cannot make a folder for the drawn sets: ") + std::strerror(errno));
    dir = tmpl;
    chmod(tmpl, 0711);  // searchable: the candidate's sandbox binds the inputs from here
    try {
      run_python("drawn_sets", {bundle, dir + "/sets", "--device", device, "--quiet"}, 1800);  // the problem's code runs
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
      throw;
    }
  }
  ~DrawnHere() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

// One candidate through the environment. The built-in generator's schedules run here; a candidate with code of
// its own (a plan with its sources, raw CUDA, a ModelNew) runs in a sandboxed process apart from its references
// (env/judge.h).
// Besides the stored sets, sets drawn for this call (or --drawn's, drawn once for a batch) are checked.
int cmd_evaluate(const EvaluateArgs& a, const std::string& self) {
  const bool cpu = a.device == "cpu";
  if (a.device != "cpu" && a.device != "cuda") throw UserError("--device is cuda or cpu, not '" + a.device + "'");
  if (cpu && a.modelnew.empty()) throw UserError("--device cpu checks a ModelNew only (--modelnew): kforge's kernels need a GPU");
  if (a.rules != "none" && a.rules != "cuda-agent") throw UserError("--rules is none or cuda-agent, not '" + a.rules + "'");
  Bundle b = load_bundle(a.bundle);
  std::optional<DrawnHere> drawn_here;
  if (!a.drawn.empty()) add_drawn_sets(b, a.drawn);
  else if (!a.no_fresh) drawn_here.emplace(a.bundle, a.device), add_drawn_sets(b, drawn_here->dir + "/sets");
  EvalResult r;
  EvalOptions eo;
  eo.tol = b.tolerance;
  if (a.plan.empty() && a.cuda.empty() && a.so.empty() && a.modelnew.empty()) {
    Plan p = lower(b.graph, a.schedule.empty() ? Schedule{} : schedule_from_json(nlohmann::json::parse(read_file(a.schedule))));
    TaskSession s(std::move(b));
    GpuLock turn(a.gpu_lock);  // everything above overlaps other evaluations; what follows takes turns
    eo.copy_gbs = a.copy_gbs > 0 ? a.copy_gbs : measure_copy_bandwidth(s.stream);
    r = evaluate(s.bundle.spec(), s.task, p, s.compiler, s.verifier, eo, s.stream);
  } else {
    // Measured here, where the candidate cannot reach: it sets the roofline floor.
    eo.copy_gbs = cpu ? 0 : a.copy_gbs > 0 ? a.copy_gbs : copy_bandwidth_here();
    if (cpu) eo.timing.trials = 0;  // checked only
    UntrustedRunOptions u;
    u.sandbox.timeout_s = a.timeout_s;
    u.sandbox.memory_bytes = 0;  // the caller's own machine: its time limit bounds it
    run_as(u.sandbox, a.sandbox_user);
    u.sandbox.scratch_dir = candidate_scratch(u.sandbox);
    u.kforge_exe = self;
    u.gpu_lock = a.gpu_lock;
    u.trusted_cache_dir = default_cache_dir();
    u.torch_pch_dir = (std::filesystem::path(default_cache_dir()) / "torch_pch").string();
    u.rules = a.rules;
    u.cpu = cpu;
    if (!cpu) try {  // the GPU this process calls 0, alone: its device node and no other
        show_only(u.sandbox, gpu_device(0));
      } catch (const UserError& e) {
        std::cerr << "kforge evaluate: the candidate sees every GPU device node: " << e.what() << std::endl;
      }
    CandidateKind kind = !a.plan.empty()       ? CandidateKind::plan
                         : !a.cuda.empty()     ? CandidateKind::cuda_source
                         : !a.modelnew.empty() ? CandidateKind::modelnew
                                               : CandidateKind::shared_object;
    if (kind == CandidateKind::modelnew) u.python = find_python(kforge_python_dir(KFORGE_PYTHON_DIR));
    const std::string& path = !a.plan.empty() ? a.plan : !a.cuda.empty() ? a.cuda : !a.modelnew.empty() ? a.modelnew : a.so;
    r = evaluate_untrusted(b, kind, path, eo, u);
    std::error_code ignored;
    std::filesystem::remove_all(u.sandbox.scratch_dir, ignored);
  }
  nlohmann::json j = r.to_json();
  j["gpu"] = !cpu && driver_available() ? device_name() : "";
  j["copy_gbs"] = eo.copy_gbs;
  write_result(a.out, j);
  drawn_here.reset();  // _Exit below runs no destructor
  // The answer is out; end here. Tearing down a context a candidate left behind can block (a kernel that
  // still spins after the run limit gave up on it), and nothing below needs to run.
  std::cout.flush();
  std::_Exit(r.relaxed ? 0 : 1);
}

int cmd_lower(const std::string& path, const std::string& schedule_path, const std::string& out, bool compile,
              const std::string& arch) {
  Graph g = load_graph(path);
  Schedule s = schedule_path.empty() ? Schedule{} : schedule_from_json(nlohmann::json::parse(read_file(schedule_path)));
  // The groups are scheduled for the architecture compiled for (Hopper-only schedules are refused below it).
  TargetFacts target = Target::here().facts();
  if (!arch.empty()) target.sm = std::stoi(arch.substr(3));
  GraphAnalysis analysis(g, target);
  Plan p = lower(analysis, s);
  write_json(out, p.to_json());
  int failures = 0;
  CompileOptions options{.cache_dir = default_cache_dir()};
  if (!arch.empty()) options.arch = arch;
  Compiler c(options);
  for (auto& k : p.kernels) {
    if (k.kind != StepKind::nvrtc) {  // a library call: nothing to compile, its parameters say what it does
      if (out.empty() && !compile) std::cout << "// " << k.name << ": " << to_string(k.kind) << " " << k.library.dump() << "\n";
      continue;
    }
    if (out.empty() && !compile) std::cout << k.source.substr(k.source.find("// kforge kernel")) << "\n";
    if (compile) {
      CompileResult r = c.compile(k.source, k.name);
      std::cout << k.name << ": " << (r.ok ? "ok" : "FAILED") << (r.cache_hit ? " (cached)" : "") << "\n";
      if (!r.ok) std::cout << r.log << "\n", ++failures;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  install_crash_trace_if_asked();
  CLI::App app{"kforge: writes fused CUDA kernels for PyTorch models and measures them on the GPU"};
  app.require_subcommand(1);
  // Levels for what the Python parts say (python/kforge/log.py reads $KFORGE_LOG_LEVEL): quiet leaves warnings,
  // errors and results, no progress bars; verbose adds every problem's details. Before the subcommand: the ones that
  // hand their arguments to Python (train, agent, report, synth) take everything after their name as theirs.
  bool quiet = false, verbose = false;
  auto* quiet_flag = app.add_flag("-q,--quiet", quiet, "warnings, errors and results only: no progress bars");
  app.add_flag("-v,--verbose", verbose, "details of every problem as well")->excludes(quiet_flag);

  std::string problem, out, device = "cuda", precision;
  int sets = 5;
  bool no_baselines = false;
  auto* imp = app.add_subcommand("import", "trace a KernelBench problem and write its task bundle");
  imp->add_option("problem", problem, "problem file (KernelBench format)")->required();
  imp->add_option("-o,--out", out, "bundle directory")->required();
  imp->add_option("--sets", sets, "hidden input sets (at least 5 for the reward)");
  imp->add_option("--device", device, "cuda or cpu (cpu: no baselines, for tests)");
  imp->add_flag("--no-baselines", no_baselines, "skip eager / torch.compile timing");
  const char* precision_help = "KernelBench's precision: Model, ModelNew and the float inputs cast to fp32, fp16 or bf16 "
                               "(default: the problem file's own dtypes)";
  const std::vector<std::string> precisions = {"fp32", "fp16", "bf16"};  // python/kforge/problem.py's PRECISIONS
  imp->add_option("--precision", precision, precision_help)->check(CLI::IsMember(precisions));
  double import_timeout_s = 1800;
  imp->add_option("--timeout", import_timeout_s, "seconds the import may take (the problem's code runs in it; 0: no limit)");

  OptimizeArgs oa;
  auto* opt = app.add_subcommand("optimize", "search schedules on the GPU, verify, time against eager and torch.compile");
  opt->add_option("problem", oa.problem, "problem file or bundle directory")->required();
  opt->add_option("--budget", oa.budget, "candidates to measure");
  opt->add_option("--db", oa.db, "measurement database (SQLite)");
  opt->add_option("--report", oa.report, "report JSON path");
  opt->add_option("--export", oa.export_path, "also write a drop-in ModelNew file here");
  opt->add_option("--bundle", oa.bundle, "where to import the problem (default kforge_out/NAME)");
  opt->add_option("--sets", oa.sets, "hidden input sets when importing");
  opt->add_option("--seed", oa.seed, "search seed");
  opt->add_option("--precision", oa.precision, precision_help)->check(CLI::IsMember(precisions));
  opt->add_flag("--no-progress", oa.no_progress, "no progress bar");
  opt->add_option("--policy", oa.policy, "trained (default: the learned policy of --checkpoint; the local search where "
                  "there is none), local (edit the best so far), random, costmodel (rank with --cost-model) or untrained "
                  "(the same network, freshly initialised)");
  opt->add_option("--cost-model", oa.cost_model, "model file from `kforge train-costmodel`");
  opt->add_option("--checkpoint", oa.checkpoint, "policy checkpoint file or folder (default kforge_policy/, its newest)");

  // Learning runs where libtorch is, in the Python module (src/CMakeLists.txt says why the command lacks it).
  auto* trn = app.add_subcommand("train", "train the learned policy: on-policy on the GPU over synth tasks, or GPU-free "
                                 "from a measurement database (--from-db); python -m kforge.train, --help there");
  trn->prefix_command();

  std::string train_db = "kforge.db", model_out = "costmodel.json", train_gpu, objective = "pairwise";
  int folds = 4;
  auto* tcm = app.add_subcommand("train-costmodel", "fit the cost model to the measurement database");
  tcm->add_option("--db", train_db, "measurement database");
  tcm->add_option("-o,--out", model_out, "model file");
  tcm->add_option("--gpu", train_gpu, "only measurements from this GPU (name as the database records it)");
  tcm->add_option("--folds", folds, "cross-validate over this many folds of whole tasks first (0: skip)");
  tcm->add_option("--objective", objective, "pairwise (rank one task's plans; default) or regression (log ms)");

  std::string bundle, plan;
  auto* exp = app.add_subcommand("export", "write a drop-in ModelNew Python file for a plan");
  exp->add_option("bundle", bundle, "bundle directory")->required();
  exp->add_option("--plan", plan, "plan JSON (default BUNDLE/best_plan.json)");
  exp->add_option("-o,--out", out, "output .py")->required();

  std::string graph_path, schedule_path;
  bool compile = false;
  auto* low = app.add_subcommand("lower", "lower a graph (JSON or bundle) to CUDA and print or write the plan; no GPU needed");
  low->add_option("graph", graph_path, "graph JSON, task.json or bundle directory")->required();
  low->add_option("--schedule", schedule_path, "schedule JSON");
  low->add_option("-o,--out", out, "write the plan JSON here");
  low->add_flag("--compile", compile, "compile every kernel with NVRTC for this GPU's architecture (sm_90 without one) and report");
  std::string lower_arch;
  low->add_option("--arch", lower_arch, "with --compile: another architecture (sm_80, sm_86, sm_89, sm_90, ...)")
      ->check(CLI::IsMember({"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120"}));

  auto* syn = app.add_subcommand("synth", "generate KernelBench-format training problems (python -m kforge.synth; --help there)");
  syn->allow_extras();
  syn->prefix_command();

  std::string build_path, build_arch, build_user = "nobody";
  double build_timeout = 300;
  auto* bld = app.add_subcommand("build-cuda", "build a raw CUDA candidate with nvcc in the sandbox (minimal root, sandbox "
                                               "user) and print {ok, log}: an agent's compile step");
  bld->add_option("file", build_path, "the .cu file")->required();
  bld->add_option("--arch", build_arch, "sm_80, sm_90, ... (default this GPU's, sm_90 without one)");
  bld->add_option("--sandbox-user", build_user, "user nvcc runs as when kforge runs as root (default nobody)");
  bld->add_option("--timeout", build_timeout, "seconds nvcc may take");

  auto* rpt = app.add_subcommand("report", "one self-contained HTML page of a suite run: speed-ups in both tiers, roofline, "
                                          "the search's curves, failures (python -m kforge.report RUN_DIR -o report.html)");
  rpt->allow_extras();
  rpt->prefix_command();

  auto* agt = app.add_subcommand("agent", "a language model writes candidates through tool calls over an OpenAI-compatible "
                                          "chat server, kforge judges them and stores the trajectory (python -m kforge.agent; --help there)");
  agt->allow_extras();
  agt->prefix_command();

  EvaluateArgs ea;
  auto* ev = app.add_subcommand("evaluate", "compile, verify, time and reward one candidate on a bundle (native protocol)");
  ev->add_option("bundle", ea.bundle, "bundle directory")->required();
  ev->add_option("--plan", ea.plan, "plan JSON (a candidate's kernels)");
  ev->add_option("--schedule", ea.schedule, "schedule JSON for the built-in generator (default: its default)");
  ev->add_option("-o,--out", ea.out, "result JSON (default: stdout)");
  ev->add_option("--cuda", ea.cuda, "a raw CUDA candidate exporting kforge_forward (see `kforge abi`)");
  ev->add_option("--so", ea.so, "a raw CUDA candidate already built into a shared object");
  ev->add_option("--copy-gbs", ea.copy_gbs, "device copy bandwidth (GB/s) measured before; default: measure it");
  ev->add_option("--gpu-lock", ea.gpu_lock, "take turns on the GPU with other evaluations (flock on this file) for checks and timing");
  ev->add_option("--modelnew", ea.modelnew, "a KernelBench-style ModelNew file (runs in Python, kb protocol)");
  ev->add_option("--rules", ea.rules, "none, or cuda-agent: no torch operator inside a ModelNew's forward");
  ev->add_option("--device", ea.device, "cuda, or cpu: a ModelNew checked on the CPU, not timed");
  ev->add_option("--sandbox-user", ea.sandbox_user, "user the candidate runs as when kforge runs as root (default nobody)");
  ev->add_option("--timeout", ea.timeout_s, "seconds the candidate's process may run");
  ev->add_option("--drawn", ea.drawn, "sets drawn before by `kforge draw-sets` for a batch of evaluations (default: "
                 "draw a fresh set and the sets beyond get_inputs' distribution for this evaluation)");
  ev->add_flag("--no-fresh", ea.no_fresh, "the stored sets only (no Python at evaluation time; a policy can learn them)");
  std::string drawn_out;
  int fresh = 1;
  bool no_beyond = false;
  auto* draw = app.add_subcommand("draw-sets", "draw input sets for a batch of evaluations: fresh from get_inputs under a "
                                  "seed nobody stores, and beyond get_inputs' distribution (python -m kforge.drawn_sets)");
  draw->add_option("bundle", bundle, "bundle directory")->required();
  draw->add_option("-o,--out", drawn_out, "folder to write (replaced); keep it from candidates: it holds references")->required();
  draw->add_option("--fresh", fresh, "fresh draws of get_inputs (default 1)");
  draw->add_flag("--no-beyond", no_beyond, "no sets beyond get_inputs' distribution");
  draw->add_option("--device", device, "cuda or cpu");
  RunCandidateArgs rc;
  auto* run_cand = app.add_subcommand("run-candidate", "the untrusted end of an evaluation, inside the candidate's sandbox "
                                                       "(started by `kforge evaluate` and `kforge serve`; protocol on stdin/stdout)");
  run_cand->group("");  // internal
  run_cand->add_option("--inputs", rc.inputs, "folder with params/<i>.bin and sets/<k>/in<i>.bin")->required();
  run_cand->add_option("--plan", rc.plan);
  run_cand->add_option("--cuda", rc.cuda);
  run_cand->add_option("--so", rc.so);
  run_cand->add_option("--trusted-cache", rc.trusted_cache);
  auto* copy_bw = app.add_subcommand("copy-bandwidth", "print the GPU's name and device-to-device copy bandwidth as JSON");
  copy_bw->group("");  // internal: the service's trusted measurement of the roofline's bandwidth
  auto* wk = app.add_subcommand("worker", "evaluate schedules for one task, one JSON job per line on stdin (the service's persistent worker)");
  wk->add_option("bundle", bundle, "bundle directory")->required();
  std::string worker_lock, worker_drawn;
  wk->add_option("--drawn", worker_drawn, "sets of `kforge draw-sets` checked beside the stored ones");
  wk->add_option("--gpu-lock", worker_lock, "take turns on the GPU with other evaluations (flock on this file) for each job");
  auto* abi = app.add_subcommand("abi", "print the C ABI a raw CUDA candidate for this task must export");
  abi->add_option("bundle", bundle, "bundle directory or graph JSON")->required();

#ifdef KFORGE_HAVE_SERVER
  ServeArgs sa;
  auto* srv = add_serve_command(app, sa);
#endif

  CLI11_PARSE(app, argc, argv);
  if (quiet || verbose) setenv("KFORGE_LOG_LEVEL", quiet ? "quiet" : "verbose", 1);
  try {
    if (*imp) {
      std::vector<std::string> args = {"import", problem, "-o", out, "--sets", std::to_string(sets), "--device", device};
      if (no_baselines) args.push_back("--no-baselines");
      if (!precision.empty()) args.insert(args.end(), {"--precision", precision});
      try {
        run_python("bridge", args, import_timeout_s);
      } catch (const UserError&) {  // a killed import leaves its half-written folder (BundleWriter's BUNDLE.tmp-*)
        fs::path target = fs::absolute(out);
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(target.parent_path(), ec))
          if (e.path().filename().string().rfind(target.filename().string() + ".tmp-", 0) == 0) fs::remove_all(e.path(), ec);
        throw;
      }
      return 0;
    }
    if (*opt) return cmd_optimize(oa);
    if (*exp) {
      run_python("export", {bundle, plan.empty() ? bundle + "/best_plan.json" : plan, "-o", out});
      return 0;
    }
    if (*low) return cmd_lower(graph_path, schedule_path, out, compile, lower_arch);
    if (*ev) return cmd_evaluate(ea, std::filesystem::read_symlink("/proc/self/exe").string());
    if (*draw) {
      std::vector<std::string> args = {bundle, drawn_out, "--fresh", std::to_string(fresh), "--device", device};
      if (no_beyond) args.push_back("--no-beyond");
      run_python("drawn_sets", args);
      return 0;
    }
    if (*run_cand) return run_candidate(rc);
    if (*copy_bw) {
      double gbs = copy_bandwidth_here();
      std::cout << nlohmann::json{{"gpu", device_name()}, {"copy_gbs", gbs}}.dump() << "\n";
      return 0;
    }
    if (*wk) return serve_plan_jobs(bundle, worker_drawn, worker_lock, std::cin, std::cout);
    if (*abi) {
      std::cout << abi_header(load_graph(bundle));
      return 0;
    }
    if (*tcm) return cmd_train_costmodel(train_db, model_out, train_gpu, folds, objective);
    if (*trn) return python_status("train", trn->remaining());
    if (*agt) return python_status("agent", agt->remaining());
    if (*rpt) return python_status("report", rpt->remaining());
    if (*bld) return cmd_build_cuda(build_path, build_arch, build_user, build_timeout);
    if (*syn) {
      run_python("synth", syn->remaining());
      return 0;
    }
#ifdef KFORGE_HAVE_SERVER
    if (*srv) return run_serve(sa, argv[0]);
#endif
  } catch (const UserError& e) {
    std::cerr << "kforge: error: " << e.what() << "\n";
    return 2;
  } catch (const InternalError& e) {
    std::cerr << "kforge: internal error (please report): " << e.what() << "\n";
    return 3;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "kforge: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kforge: internal error (please report): " << e.what() << "\n";
    return 3;
  }
  return 0;
}
