#include "env/judge.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>

#include "env/gpu_lock.h"
#include "env/torch_pch.h"
#include "ir/error.h"
#include "runtime/driver.h"
#include "runtime/target.h"

namespace kforge {

namespace fs = std::filesystem;

CompareResult compare_on_host(const void* out_p, const void* ref_p, int64_t n, DType dtype, const Tolerance& tol) {
  CompareResult c;
  c.count = n;
  c.tol = tol;
  int64_t first = n;
  if (is_float(dtype)) {  // as the verifier's kf_compare (env/verify.cpp), in float
    auto value = [dtype](const void* p, int64_t i) {
      return dtype == DType::f32 ? static_cast<const float*>(p)[i]
                                 : float(half_value(dtype, static_cast<const uint16_t*>(p)[i]));
    };
    const float ts = float(tol.strict), tr = float(tol.relaxed);
    float max_err = 0.f;
    for (int64_t i = 0; i < n; ++i) {
      float o = value(out_p, i), r = value(ref_p, i);
      if (!std::isfinite(o) || !std::isfinite(r)) {
        if (!(std::isinf(o) && std::isinf(r) && o == r)) {
          ++c.nonfinite;
          first = std::min(first, i);
        }
        continue;
      }
      float err = std::fabs(o - r);
      max_err = std::max(max_err, err);
      if (err > ts + ts * std::fabs(r)) ++c.bad_strict, first = std::min(first, i);
      if (err > tr + tr * std::fabs(r)) ++c.bad_relaxed;
    }
    c.max_abs_err = max_err;
    if (first < n) c.first_bad = first, c.got = value(out_p, first), c.expected = value(ref_p, first);
    return c;
  }
  const size_t eb = dtype_size(dtype);
  const auto* out = static_cast<const unsigned char*>(out_p);
  const auto* ref = static_cast<const unsigned char*>(ref_p);
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(out + i * eb, ref + i * eb, eb) != 0) ++c.bad_strict, ++c.bad_relaxed, first = std::min(first, i);
  if (first < n) c.first_bad = first;
  return c;
}

TrustedJudge::TrustedJudge(const Bundle& b, const EvalOptions& eo) : bundle_(b), eo_(eo) { eo_.tol = b.tolerance; }

nlohmann::json TrustedJudge::task_header() const {
  TaskSpec spec = bundle_.spec();
  return {{"task", {{"name", spec.name}, {"graph", graph_to_json(spec.graph)}, {"eager_ms", spec.eager_ms},
                    {"compile_ms", spec.compile_ms}}},
          {"num_sets", bundle_.stored_sets()},
          {"drawn", drawn_header()},
          {"copy_gbs", eo_.copy_gbs},
          {"run_limit_ms", eo_.run_limit_ms},
          {"timing", {{"warmup", eo_.timing.warmup}, {"trials", eo_.timing.trials}, {"flush_bytes", eo_.timing.flush_bytes}}}};
}

nlohmann::json TrustedJudge::drawn_header() const {
  nlohmann::json d = nlohmann::json::array();
  for (const DrawnSet& set : bundle_.drawn) d.push_back({{"beyond", set.beyond}});
  return d;
}

bool TrustedJudge::judge_set(int s, const std::string& payload, EvalResult& r, bool& strict) {
  const Graph& g = bundle_.graph;
  size_t expected = 0;
  for (int id : g.outputs) expected += size_t(nbytes(g.at(id).type));
  if (payload.size() != expected) {
    r.log += "set " + std::to_string(s) + ": the candidate's process sent " + std::to_string(payload.size()) +
             " bytes of outputs; the task's outputs hold " + std::to_string(expected) + "\n";
    strict = false;
    return false;
  }
  bool relaxed = true;
  size_t at = 0;
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    const Node& out = g.at(g.outputs[j]);
    MappedFile ref = bundle_.output_file(s, int(j));
    CompareResult c = compare_on_host(payload.data() + at, ref.data(), numel(out.type.shape), out.type.dtype,
                                      bundle_.tolerances.at(eo_.tol, s, int(j)));
    at += ref.size();
    if (!c.strict()) r.log += "set " + std::to_string(s) + ": " + c.describe(out.name) + "\n";
    strict = strict && c.strict();
    relaxed = relaxed && c.relaxed();
  }
  return relaxed;
}

namespace {
double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Hack catalogue, patching timers: the candidate's process measures its own trials (a raw CUDA candidate shares
// that process); its trials cannot add up to more than the time this side saw pass while they ran.
Stats credible_stats(const nlohmann::json& h, const char* key, double wall_ms, int trials) {
  Stats s = stats_from_json(h.at(key));
  if (s.trials < trials)
    throw UserError(std::string("'") + key + "' reports " + std::to_string(s.trials) + " trials; " + std::to_string(trials) + " were asked for");
  if (!(s.median_ms > 0) || !(s.mean_ms > 0) || s.trials < 1 || !std::isfinite(s.median_ms) || !std::isfinite(s.mean_ms))
    throw UserError(std::string("'") + key + "' holds no usable timing: " + h.at(key).dump().substr(0, 200));
  double reported = s.mean_ms * s.trials;
  if (reported > 1.02 * wall_ms + 1.0)
    throw UserError("timing not credible: the candidate's process reports " + std::to_string(s.trials) + " trials of " +
                    std::to_string(s.mean_ms) + " ms on average, " + std::to_string(reported) + " ms, in " +
                    std::to_string(wall_ms) + " ms of the judge's clock");
  return s;
}
}  // namespace

EvalResult TrustedJudge::run(FrameReader& in, int out_fd, double timeout_s, const std::function<void()>& tick, Turn& turn) {
  EvalResult r;
  const int last = bundle_.declared_sets() - 1, sets = bundle_.num_sets();
  const bool check_only = eo_.timing.trials == 0;  // no timing is due: the check after timing follows the sets
  int next_set = 0;
  bool strict = true, relaxed = true, timed = false, after_timing = false, retimed = false, done = false;
  std::string candidate_log;
  auto step_start = std::chrono::steady_clock::now();
  std::optional<Frame> ready;
  try {
    ready = in.next(timeout_s, tick);
  } catch (const std::exception& e) {
    throw NotEvaluated(e.what());
  }
  if (!ready || !ready->header.value("ready", false)) throw NotEvaluated("the evaluation's process could not start");
  auto grant_turn = [&] {
    if (turn.held) throw UserError("a second turn on the GPU was asked for");
    turn.held.emplace(turn.lock_path, turn.waiting_tick ? turn.waiting_tick : tick);
    if (turn.started) turn.started();
    write_frame(out_fd, {{"turn", true}});
  };
  auto step_limit_s = [&] { return turn.held ? std::min(timeout_s, kStepInTurnS) : timeout_s; };
  try {
    std::optional<Frame> f = in.next(timeout_s, tick);
    // A candidate whose own code is loaded in its turn (a ModelNew) asks for the turn before its hello; its load
    // (a build its prebuild could not make included) has the evaluation's whole time, not one step's.
    if (f && f->header.contains("turn")) {
      grant_turn();
      f = in.next(timeout_s, tick);
    }
    if (!f) throw UserError("the candidate's process ended before it said hello");
    if (!f->header.value("hello", false))
      throw UserError("the candidate's process sent " + f->header.dump().substr(0, 200) + " where its hello was due");
    r.compiled = f->header.value("compiled", false);
    r.compile_ms = f->header.value("compile_ms", 0.0);
    if (f->header.contains("library") && f->header["library"].is_array()) r.library = f->header["library"];
    if (!r.compiled) {
      r.log = f->header.value("log", std::string());
      return r;
    }
    while (relaxed && !done && (f = in.next(step_limit_s(), tick))) {
      const nlohmann::json& h = f->header;
      if (h.contains("turn")) {
        grant_turn();
      } else if (h.contains("judge")) {
        if (!turn.held) throw UserError("outputs came before the candidate's turn on the GPU");
        int s = h.at("set").get<int>();
        bool after = h.value("after_timing", false);
        // Order: the sets of get_inputs' distribution (0..last), the timing, the check after timing on `last`,
        // then the sets beyond it (last+1..sets-1).
        bool due = !timed       ? !after && s == next_set && s <= last
                   : !after_timing ? after && s == last
                                   : !after && s == next_set && s < sets;
        if (!due)
          throw UserError("outputs of set " + std::to_string(s) + (after ? " after timing" : "") + " came where " +
                          (!timed ? (next_set <= last ? "set " + std::to_string(next_set) : std::string("the timing"))
                                  : !after_timing ? "the check after timing on set " + std::to_string(last)
                                                  : next_set < sets ? "set " + std::to_string(next_set) : "no more outputs") +
                          " was due");
        if (s > last) {
          // Beyond get_inputs' distribution: its own verdict. The candidate's process is not told how it did.
          ++r.beyond_sets;
          size_t from = r.log.size();
          r.beyond_relaxed &= judge_set(s, f->payload, r, r.beyond_strict);
          if (r.log.size() > from) r.log.insert(from, "beyond get_inputs' distribution (" + bundle_.drawn.at(size_t(s - bundle_.stored_sets())).how + "): ");
        } else {
          relaxed = judge_set(s, f->payload, r, strict);
        }
        if (after) after_timing = true;
        else ++next_set;
        if (after && !relaxed)
          r.log += "wrong after timing (the timed inputs holding set " + std::to_string(last) + "'s values: results must "
                   "be right once nobody is checking, and follow their inputs)\n";
        if (check_only && next_set == last + 1) timed = true;
        write_frame(out_fd, {{"relaxed", relaxed}, {"strict", strict}});
        step_start = std::chrono::steady_clock::now();
      } else if (h.contains("timed")) {
        if (check_only) throw UserError("a timing came where none was asked for");
        if (timed || next_set != last + 1) throw UserError("a timing came before every set was judged");
        r.native = credible_stats(h, "timed", ms_since(step_start), eo_.timing.trials);
        r.wall_ms = h.value("wall_ms", 0.0);
        timed = true;
      } else if (h.contains("escaped")) {
        r.log += "work escaped the timed stream: events say " + std::to_string(h["escaped"].value("events_ms", 0.0)) +
                 " ms, the fastest synchronized run " + std::to_string(h["escaped"].value("synced_ms", 0.0)) +
                 " ms, in each of 3 rounds\n";
        relaxed = false;
      } else if (h.contains("retimed")) {
        if (!after_timing || retimed) throw UserError("a second timing came where none was due");
        Stats again = credible_stats(h, "retimed", ms_since(step_start), eo_.timing.trials);
        r.log += "under the roofline floor at " + std::to_string(r.native.median_ms) + " ms: re-measured, " +
                 std::to_string(again.median_ms) + " ms\n";
        r.native = again;
        retimed = true;
      } else if (h.contains("rejected")) {  // the candidate's process failed its own run (hang, launch error)
        std::string why = h["rejected"].is_string() ? h["rejected"].get<std::string>() : h["rejected"].dump();
        if (after_timing) {  // on a set beyond the distribution: that verdict only
          r.beyond_relaxed = r.beyond_strict = false;
          r.log += "beyond get_inputs' distribution: " + why;
        } else {
          r.log += why;
          relaxed = false;
        }
      } else if (h.contains("done")) {
        if (h.contains("log") && h["log"].is_string()) candidate_log = h["log"].get<std::string>();
        done = true;
      } else {
        throw UserError("unexpected frame " + h.dump().substr(0, 200));
      }
    }
  } catch (const std::exception& e) {  // UserError or a malformed header's json exception: the candidate's fault
    r.log += std::string("rejected: ") + e.what() + "\n";
    relaxed = false;
  }
  if (!candidate_log.empty()) r.log += "candidate's process: " + candidate_log.substr(0, 4000);
  if (relaxed && after_timing && next_set < sets && r.beyond_relaxed) {  // ended (crashed?) among the sets beyond
    r.beyond_relaxed = r.beyond_strict = false;
    r.log += "the candidate's process ended before the sets beyond get_inputs' distribution were judged (" +
             std::to_string(next_set - last - 1) + " of " + std::to_string(sets - last - 1) + ")\n";
  }
  if (!relaxed || !timed || !after_timing) {
    if (relaxed)
      r.log += std::string("the candidate's process ") + (done ? "said it was done" : "ended") + " before its evaluation did (" +
               std::to_string(next_set) + " of " + std::to_string(sets) + " sets judged" +
               (timed ? ", timed" : ", not timed") + (after_timing ? ", checked after timing" : "") + ")\n";
    r.strict = r.relaxed = false;
    return r;
  }
  r.relaxed = true;
  r.strict = strict;
  if (check_only) {
    r.reward = {};
    r.reward.reward = 0;
    r.log += "checked only (not timed): no speed-up measured, reward 0\n";
    return r;
  }
  double floor_ms = eo_.copy_gbs > 0 ? double(min_bytes(bundle_.graph)) / (eo_.copy_gbs * 1e9) * 1e3 : 0;
  TaskSpec spec = bundle_.spec();
  r.reward = compute_reward({true, r.native.median_ms, spec.eager_ms, spec.compile_ms, floor_ms});
  if (r.reward.suspect) r.log += "under the roofline floor of " + std::to_string(floor_ms) + " ms: not paid (reward 0)\n";
  return r;
}

namespace {
const char* kInputs = "/task";         // where the candidate's process finds params/ and sets/<k>/in<i>.bin
const char* kCandidateDir = "/candidate";
const char* kExe = "/kforge/kforge";
const char* kTrustedCache = "/cache";
const char* kPython = "/kforge/python";  // the kforge package, for a ModelNew's process
const char* kTorchPch = "/kforge_pch";   // torch/extension.h precompiled, for a ModelNew's builds

}  // namespace

namespace {
// The command that runs the candidate at `path` inside its sandbox, and what `o` must show it for that.
std::vector<std::string> candidate_command(CandidateKind kind, const std::string& path, const UntrustedRunOptions& opts,
                                           SandboxOptions& o) {
  const char* file = kind == CandidateKind::plan          ? "plan.json"
                     : kind == CandidateKind::cuda_source ? "candidate.cu"
                     : kind == CandidateKind::modelnew    ? "model_new.py"
                                                          : "candidate.so";
  std::string inside = std::string(kCandidateDir) + "/" + file;
  o.read_only_at.push_back({fs::absolute(path).string(), inside});
  std::vector<std::string> argv;
  if (kind == CandidateKind::modelnew) {
    const PythonRuntime& py = opts.python;
    for (const std::string& root : py.roots) {
      if (!reachable_by(o.uid, root))
        throw NotEvaluated("Python's folder " + root + " is not readable by the sandbox user (uid " + std::to_string(o.uid) +
                           "): install Python and torch where every user may read them, or choose another sandbox user");
      o.read_only.push_back(root);
    }
    o.read_only_at.push_back({py.kforge_dir, kPython});
    o.env.push_back({"PYTHONPATH", kPython});
    // load_inline builds under the scratch folder; torch.compile's caches too. Its architectures are named, as torch
    // would take them from the GPU (major.minor+PTX): the prebuild sees no GPU (torch then has none to take), and
    // the same flags let the load in the turn find the prebuild's objects.
    o.env.push_back({"TORCH_EXTENSIONS_DIR", o.scratch_dir + "/torch_extensions"});
    const Target& t = Target::here();
    o.env.push_back({"TORCH_CUDA_ARCH_LIST", std::to_string(t.major) + "." + std::to_string(t.minor) + "+PTX"});
    o.env.push_back({"TRITON_CACHE_DIR", o.scratch_dir + "/.triton"});
    o.env.push_back({"TORCHINDUCTOR_CACHE_DIR", o.scratch_dir + "/.inductor"});
    if (!opts.torch_pch_dir.empty() && fs::is_directory(opts.torch_pch_dir) && reachable_by(o.uid, opts.torch_pch_dir)) {
      o.read_only_at.push_back({fs::absolute(opts.torch_pch_dir).string(), kTorchPch});
      o.env.push_back({"KFORGE_TORCH_PCH", kTorchPch});
    }
    argv = {py.exe, "-m", "kforge.modelnew_candidate", "--inputs", kInputs, "--candidate", inside, "--problem",
            std::string(kInputs) + "/problem.py", "--rules", opts.rules, "--device", opts.cpu ? "cpu" : "cuda"};
  } else {
    o.read_only_at.push_back({fs::absolute(opts.kforge_exe).string(), kExe});
    argv = {kExe, "run-candidate", "--inputs", kInputs,
            kind == CandidateKind::plan ? "--plan" : kind == CandidateKind::cuda_source ? "--cuda" : "--so", inside};
    // A speed-up only (the verifier's kernels compiled once): left out where the sandbox user cannot reach it.
    if (!opts.trusted_cache_dir.empty() && fs::is_directory(opts.trusted_cache_dir) &&
        reachable_by(o.uid, opts.trusted_cache_dir)) {  // a copy for each candidate would cost more than it saves
      o.read_only_at.push_back({fs::absolute(opts.trusted_cache_dir).string(), kTrustedCache});
      argv.insert(argv.end(), {"--trusted-cache", kTrustedCache});
    }
  }
  return argv;
}

// A ModelNew's module run and its class built on the CPU, in the same sandbox but with no GPU device node: what it
// compiles (load_inline) is cached in its scratch folder, so that its load in its turn on the GPU finds it built,
// and no code of it runs on the GPU outside that turn. Returns the build's milliseconds and, where it failed (a
// module may need the GPU to build), a line saying so: no verdict, the evaluation builds it again.
std::pair<double, std::string> prebuild_modelnew(const std::vector<std::string>& argv, SandboxOptions o) {
  auto arg = [&](const char* flag) { return std::find(argv.begin(), argv.end(), flag)[1]; };
  o.gpu = false;
  SandboxResult sr = run_sandboxed({argv.at(0), "-m", "kforge.modelnew_candidate", "--prebuild", "--candidate",
                                    arg("--candidate"), "--problem", arg("--problem")}, o);  // built on the CPU, uncast
  // Its report is its last line (what the candidate's module printed comes before it).
  std::string out = sr.out.substr(0, sr.out.find_last_not_of("\n") + 1);
  auto j = nlohmann::json::parse(out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1), nullptr, false);
  double ms = sr.seconds * 1e3;
  std::string builds;  // what each load_inline / load did (python/kforge/extension_build.py)
  // The candidate's process wrote this line: a field of another type is skipped, never thrown at the judge.
  auto text = [](const nlohmann::json& b, const char* key) {
    return b.contains(key) && b[key].is_string() ? b[key].get<std::string>().substr(0, 400) : std::string();
  };
  if (j.is_object() && j.contains("builds") && j["builds"].is_array())
    for (const auto& b : j["builds"])
      if (b.is_object())
        builds += "extension '" + text(b, "name") + "': " + text(b, "how") + " build" +
                  (b.contains("s") && b["s"].is_number() ? ", " + std::to_string(b["s"].get<double>()).substr(0, 6) + " s" : "") +
                  (text(b, "why").empty() ? "" : " (" + text(b, "why") + ")") + "\n";
  if (sr.ok() && j.is_object() && j.value("prebuilt", false)) return {ms, builds};
  std::string why = j.is_object() ? j.value("why", std::string()) : sr.cause() + ": " + sr.err.substr(sr.err.size() > 500 ? sr.err.size() - 500 : 0);
  return {ms, builds + "built in its turn on the GPU: its build without a GPU failed (" + why + ")\n"};
}
}  // namespace

EvalResult evaluate_untrusted(const Bundle& b, CandidateKind kind, const std::string& path, const EvalOptions& eo,
                              const UntrustedRunOptions& opts) {
  SandboxOptions o = opts.sandbox;
  if (o.scratch_dir.empty()) throw UserError("an untrusted candidate needs a scratch folder of its own");
  if (!o.namespaces) throw UserError("an untrusted candidate runs only in the bubblewrap sandbox (namespaces)");
  if (opts.cpu && eo.timing.trials != 0) throw UserError("a candidate on the CPU is checked only: no timing trials");
  o.minimal_root = true;
  o.gpu = !opts.cpu;
  // Folders the caller shows its trusted processes (the kforge binary's, the Python package's, a service folder
  // that may lie beside them) are not the candidate's: it sees only what is bound below.
  o.read_only.clear();
  // The candidate's view: the task's params and inputs at kInputs, never the bundle's folder (its references).
  for (size_t i = 0; i < b.graph.params.size(); ++i)
    o.read_only_at.push_back({b.dir + "/params/" + std::to_string(i) + ".bin", std::string(kInputs) + "/params/" + std::to_string(i) + ".bin"});
  for (int s = 0; s < b.num_sets(); ++s)  // stored and drawn sets alike at /task/sets/<k>: their inputs only
    for (size_t i = 0; i < b.graph.inputs.size(); ++i) {
      std::string file = "/in" + std::to_string(i) + ".bin";
      o.read_only_at.push_back({b.set_dir(s) + file, kInputs + std::string("/sets/") + std::to_string(s) + file});
    }
  if (kind == CandidateKind::modelnew) {  // the task's own code: Model and get_init_inputs build ModelNew
    fs::path problem = fs::path(b.dir) / "problem.py";  // never task.json's "source": a path anyone could have written
    if (!fs::exists(problem))
      throw UserError("the bundle keeps no problem file (problem.py; bundles imported before it lack one): import the "
                      "problem again to evaluate a ModelNew");
    o.read_only_at.push_back({problem.string(), std::string(kInputs) + "/problem.py"});
  }
  std::string pch_log;
  // Not without a driver: the headers serve builds in the candidate's turn on the GPU, which such a machine never
  // grants, and precompiling them costs tens of seconds of its first job.
  if (kind == CandidateKind::modelnew && o.gpu && !opts.torch_pch_dir.empty() && driver_available()) {
    std::string why = ensure_torch_pch(opts.python, opts.torch_pch_dir);
    if (!why.empty()) pch_log = why + "\n";
  }
  std::vector<std::string> argv = candidate_command(kind, path, opts, o);
  // KernelBench's precision of the task (python/kforge/problem.py): ModelNew is cast to it as Model was.
  if (kind == CandidateKind::modelnew && b.task.contains("precision") && b.task["precision"].is_string())
    argv.insert(argv.end(), {"--precision", b.task["precision"].get<std::string>()});
  o.env.push_back({"HOME", o.scratch_dir});
  o.env.push_back({"KFORGE_CACHE", o.scratch_dir + "/nvrtc"});

  std::pair<double, std::string> prebuilt{0, ""};
  if (kind == CandidateKind::modelnew && o.gpu) prebuilt = prebuild_modelnew(argv, o);

  TrustedJudge judge(b, eo);
  SandboxResult sr;
  TrustedJudge::Turn turn;  // held until the candidate's process is gone (declared before it, released after)
  turn.lock_path = opts.gpu_lock;
  SandboxedProcess p = spawn_sandboxed(argv, o);
  EvalResult r;
  auto t0 = std::chrono::steady_clock::now();
  // Waiting while another evaluation holds the GPU is not the candidate's time: its clock restarts with its turn.
  turn.waiting_tick = [&] {
    if (sandbox_over_limits(p, o, sr)) throw UserError("the candidate's process " + sr.cause());
  };
  turn.started = [&] { t0 = std::chrono::steady_clock::now(); };
  try {
    write_frame(p.in, judge.task_header());
    size_t max_payload = 0;
    for (int id : b.graph.outputs) max_payload += size_t(nbytes(b.graph.at(id).type));
    FrameReader reader(p.out, max_payload, p.err, &sr.err, o.max_output_bytes);
    auto tick = [&] {
      if (ms_since(t0) > o.timeout_s * 1e3) {
        sr.timed_out = true;
        throw UserError("the candidate's process ran past its " + std::to_string(int(o.timeout_s)) + " s");
      }
      if (sandbox_over_limits(p, o, sr)) throw UserError("the candidate's process " + sr.cause());
    };
    r = judge.run(reader, p.in, o.timeout_s, tick, turn);
  } catch (const NotEvaluated& e) {
    end_sandboxed(p, o, sr);
    std::string err = sr.err.substr(sr.err.size() > 2000 ? sr.err.size() - 2000 : 0);
    throw NotEvaluated(std::string(e.what()) + " (" + sr.cause() + ")" + (err.empty() ? "" : ":\n" + err));
  } catch (const std::exception& e) {  // the link broke before the judge ran: the candidate's process is gone
    r.log += std::string("rejected: ") + e.what() + "\n";
  }
  end_sandboxed(p, o, sr);
  if (kind == CandidateKind::modelnew) r.protocol = "kb";  // CUDA events around the Python call, as the baselines
  r.compile_ms += prebuilt.first;
  r.log = pch_log + prebuilt.second + r.log;
  if (!r.relaxed && !sr.ok() && !sr.timed_out)
    r.log += "candidate's process " + sr.cause() + (sr.err.empty() ? "" : ":\n" + sr.err.substr(sr.err.size() > 2000 ? sr.err.size() - 2000 : 0)) + "\n";
  return r;
}

}  // namespace kforge
