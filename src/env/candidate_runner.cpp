#include "env/candidate_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "env/candidate_link.h"
#include "env/evaluator.h"
#include "ir/error.h"
#include "runtime/driver.h"
#include "runtime/executor.h"
#include "env/raw_cuda.h"

namespace kforge {

namespace {

// Sends the task's outputs to the trusted judge and returns its answer. Nothing here decides a verdict: a
// candidate that rewrites this process can only spoil what it reports about itself.
class RemoteJudge : public OutputJudge {
 public:
  RemoteJudge(FrameReader& in, int out) : in_(in), out_(out) {}
  bool judge(DeviceTask& task, int s, bool after_timing, CUstream stream, std::string&, bool& strict) override {
    size_t total = 0;
    for (int j = 0; j < task.num_outputs(); ++j) total += task.output_bytes(j);
    host_.resize(total);
    KF_CU(driver().cuStreamSynchronize(stream));
    size_t at = 0;
    for (int j = 0; j < task.num_outputs(); ++j) {
      if (task.output_bytes(j)) KF_CU(driver().cuMemcpyDtoH(host_.data() + at, task.output(j), task.output_bytes(j)));
      at += task.output_bytes(j);
    }
    write_frame(out_, {{"judge", true}, {"set", s}, {"after_timing", after_timing}}, {{host_.data(), total}});
    std::optional<Frame> answer = in_.next(3600);
    if (!answer) throw UserError("the judge closed the link");
    strict = strict && answer->header.value("strict", false);
    return answer->header.value("relaxed", false);
  }
  void timed(const Stats& s, double wall_ms) override { write_frame(out_, {{"timed", to_json(s)}, {"wall_ms", wall_ms}}); }
  void escaped(double events_ms, double synced_ms) override {
    write_frame(out_, {{"escaped", {{"events_ms", events_ms}, {"synced_ms", synced_ms}}}});
  }
  void retimed(const Stats& s) override { write_frame(out_, {{"retimed", to_json(s)}}); }

 private:
  FrameReader& in_;
  int out_;
  std::string host_;
};

// The link keeps descriptors of its own (not inherited by nvcc); what the candidate prints goes to stderr.
std::pair<int, int> take_link() {
  int in = fcntl(0, F_DUPFD_CLOEXEC, 3), out = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (in < 0 || out < 0) throw UserError("run-candidate: cannot keep the link's descriptors");
  dup2(2, 1);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0), close(devnull);
  return {in, out};
}

}  // namespace

int run_candidate(const RunCandidateArgs& a) {
  auto [link_in, link_out] = take_link();
  FrameReader in(link_in, 0);
  std::optional<Frame> hello_from_judge = in.next(120);
  if (!hello_from_judge) throw UserError("run-candidate: the judge sent no task");
  const nlohmann::json& h = hello_from_judge->header;
  Bundle b;
  b.dir = a.inputs;
  b.task = {{"num_sets", h.at("num_sets")}};
  b.graph = graph_from_json(h.at("task").at("graph"));
  for (const auto& d : h.value("drawn", nlohmann::json::array()))  // the judge bound their inputs after the stored sets'
    b.drawn.push_back({a.inputs + "/sets/" + std::to_string(b.num_sets()), d.value("beyond", false), ""});
  TaskSpec spec{h["task"].value("name", "task"), b.graph, h["task"].value("eager_ms", 0.0), h["task"].value("compile_ms", 0.0)};
  EvalOptions eo;
  eo.copy_gbs = h.value("copy_gbs", 0.0);
  eo.run_limit_ms = h.value("run_limit_ms", 0.0);
  eo.timing.warmup = h["timing"].value("warmup", eo.timing.warmup);
  eo.timing.trials = h["timing"].value("trials", eo.timing.trials);
  eo.timing.flush_bytes = h["timing"].value("flush_bytes", eo.timing.flush_bytes);

  ensure_context();
  DeviceTask task(b, /*references=*/false);
  CompileOptions co{.cache_dir = default_cache_dir()};
  co.read_only_cache_dir = a.trusted_cache;
  Compiler compiler(co);
  Verifier verifier(compiler);
  CUstream stream = nullptr;
  KF_CU(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  write_frame(link_out, {{"ready", true}});

  // Building overlaps other evaluations; the checks and timing take turns on the GPU. A raw CUDA object is
  // loaded (its constructors run: candidate code) only in its turn, so it cannot disturb another's timing.
  EvalResult r;
  std::unique_ptr<Executable> exe;
  std::string so_path = a.so;
  bool use_graph = true;
  try {
    if (!a.plan.empty()) {  // NVRTC and the driver load the plan's kernels: none of its code runs yet
      Plan p = Plan::from_json(nlohmann::json::parse(read_file(a.plan)));
      use_graph = p.schedule.cuda_graph;
      auto lp = std::make_unique<LoadedPlan>(std::move(p), compiler);
      r.compile_ms = lp->compile_ms;
      r.library = lp->library_steps();
      exe = std::move(lp);
    } else if (!a.cuda.empty()) {
      RawCudaOptions build;
      build.cache_dir = "raw";  // in the working directory: the sandbox's scratch folder
      RawCudaBuild built = build_raw_cuda(read_file(a.cuda), build);
      r.compile_ms = built.millis;
      if (built.ok) so_path = built.so_path;
      else r.log = built.log;
    }
  } catch (const std::exception& e) {
    r.log += e.what();
  }
  bool compiled = exe != nullptr || !so_path.empty();
  write_frame(link_out, {{"hello", true}, {"compiled", compiled}, {"log", r.log}, {"compile_ms", r.compile_ms},
                         {"library", r.library}});
  if (!compiled) std::_Exit(0);
  write_frame(link_out, {{"turn", true}});
  std::optional<Frame> turn = in.next(24 * 3600);  // the judge answers once the GPU is this evaluation's
  if (!turn || !turn->header.value("turn", false)) std::_Exit(0);
  RemoteJudge judge(in, link_out);
  try {
    if (!exe) exe = std::make_unique<RawCudaCandidate>(so_path);
    r = evaluate(spec, task, *exe, use_graph, verifier, judge, eo, stream, r);
  } catch (const std::exception& e) {
    write_frame(link_out, {{"rejected", std::string("run failed: ") + e.what() + "\n"}});
  }
  write_frame(link_out, {{"done", true}, {"log", r.log}});
  // Tearing down a context a candidate left behind can block (a kernel still spinning): end here.
  std::_Exit(0);
}

}  // namespace kforge
