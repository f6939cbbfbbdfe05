// The environment's evaluation of one candidate plan: compile, run on every hidden input set with
// poisoned outputs, verify every element in both tiers, time (native protocol), verify again after
// timing (a candidate must not turn wrong once it is no longer checked), and pay the reward.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "env/bundle.h"
#include "env/reward.h"
#include "env/timing.h"
#include "env/verify.h"
#include "runtime/executor.h"
#include "env/raw_cuda.h"

namespace kforge {

// A task's data on the device: params, every hidden input set with its references, and output
// buffers. Either uploaded from a bundle (owned) or borrowed from the caller (PyTorch's tensors, when the
// Python side hosts the search: no disk round trip for inputs of several GB).
class DeviceTask {
 public:
  // `references` false: the inputs and params only (a candidate's process, whose outputs a trusted judge
  // compares, env/judge.h); reference() is then out of range.
  explicit DeviceTask(const Bundle& b, bool references = true);
  // Borrowed device pointers: sets[k] are the inputs of set k, refs[k] its reference outputs; `tolerances` the
  // strict tier of each (empty: the global one).
  DeviceTask(const Graph& g, std::vector<std::vector<CUdeviceptr>> sets, std::vector<std::vector<CUdeviceptr>> refs,
             std::vector<CUdeviceptr> params, SetTolerances tolerances = {});
  Bindings bindings(int set) const;
  CUdeviceptr reference(int set, int output) const { return refs_.at(set).at(output); }
  // What output `output` of set `set` is judged with: `global`, the strict tier the set's own where it has one.
  Tolerance tolerance(int set, int output, const Tolerance& global) const { return tolerances_.at(global, set, output); }
  CUdeviceptr output(int j) const { return outputs_.at(j).get(); }
  size_t output_bytes(int j) const { return outputs_.at(j).bytes(); }
  int num_sets() const { return int(inputs_.size()); }
  // Sets [0, declared_sets()) are get_inputs' distribution, the rest beyond it (Bundle::declared_sets).
  int declared_sets() const { return declared_; }
  int num_outputs() const { return int(outputs_.size()); }
  // Exchanges the input values of sets a and b (each keeps its addresses), through one scratch buffer allocated
  // with the task; an address a set passes twice is exchanged once.
  void exchange_inputs(int a, int b, CUstream stream);
  // False while an exchange is not undone: a candidate that hung in the check after timing leaves the task so,
  // and evaluate() refuses it (the worker that held the hang restarts with a fresh task).
  bool inputs_in_place() const { return !exchanged_; }

 private:
  void allocate_outputs(const Graph& g);
  std::vector<size_t> input_bytes_;
  DeviceBuffer scratch_;  // the largest input
  bool exchanged_ = false;
  std::vector<DeviceBuffer> owned_, outputs_;
  std::vector<CUdeviceptr> params_;
  std::vector<std::vector<CUdeviceptr>> inputs_, refs_;
  SetTolerances tolerances_;
  int declared_ = 0;
};

struct EvalOptions {
  Tolerance tol;  // global; a task's sets may carry their own strict tier (DeviceTask::tolerance)
  TimingOptions timing;
  double copy_gbs = 0;  // measured device-to-device copy bandwidth (read + write), for the roofline floor
  // A candidate whose first checked run takes longer than this is stopped (reward -1): it cannot win
  // and would hold the GPU. 0 = max(250 ms, 50 x the eager baseline).
  double run_limit_ms = 0;
};

struct EvalResult {
  bool compiled = false, strict = false, relaxed = false;
  std::string log;      // compile errors or the first verification failures
  Stats native;         // the time paid for, valid when relaxed: native protocol, or kb for a ModelNew
  std::string protocol = "native";
  double wall_ms = 0;   // host clock per trial
  double compile_ms = 0;
  RewardResult reward;
  nlohmann::json library = nlohmann::json::array();  // LoadedPlan::library_steps() of a plan's library calls
  // The sets beyond get_inputs' distribution: how many were checked, and the tiers over them (a verdict beside
  // the KernelBench-compatible one, which they never change).
  int beyond_sets = 0;
  bool beyond_strict = true, beyond_relaxed = true;
  std::string tier() const { return strict ? "strict" : relaxed ? "relaxed" : "failed"; }
  // Whether a set beyond the distribution was judged (a run that failed on one was).
  bool beyond_checked() const { return beyond_sets > 0 || !beyond_relaxed; }
  std::string distribution_verdict() const;
  nlohmann::json to_json() const;
};

// Who compares a run's outputs with the references, and hears what the timing found. The evaluation's steps are
// the same wherever the references are: in this process (LocalJudge: the trusted generator's plans), or in a
// trusted process apart from the candidate's (env/candidate_runner.h sends every output there, env/judge.h), so
// that a candidate never shares an address space, a file system view or a GPU context with its answers.
class OutputJudge {
 public:
  virtual ~OutputJudge() = default;
  // The task's outputs (just written by a run) judged as set `s`'s; `after_timing`: the check after timing at
  // the timed addresses. Appends what failed to `log`; `strict` and-ed with the strict tier. Returns whether
  // the relaxed tier holds.
  virtual bool judge(DeviceTask& task, int s, bool after_timing, CUstream stream, std::string& log, bool& strict) = 0;
  virtual void timed(const Stats&, double /*wall_ms_per_trial*/) {}
  virtual void escaped(double /*events_ms*/, double /*synced_ms*/) {}  // work escaped the timed stream
  virtual void retimed(const Stats&) {}
};

// The references on the device beside the outputs, compared with the Verifier's kernels.
class LocalJudge : public OutputJudge {
 public:
  LocalJudge(const Graph& g, Verifier& v, const Tolerance& tol) : graph_(g), verifier_(v), tol_(tol) {}
  bool judge(DeviceTask& task, int s, bool after_timing, CUstream stream, std::string& log, bool& strict) override;

 private:
  const Graph& graph_;
  Verifier& verifier_;
  Tolerance tol_;
};

EvalResult evaluate(const TaskSpec& spec, DeviceTask& task, const Plan& plan, const Compiler& compiler,
                    Verifier& verifier, const EvalOptions& opts, CUstream stream);
// A raw CUDA candidate (env/raw_cuda.h) built with nvcc, then checked and timed the same way, in this process
// beside its references: for tests of the evaluation's steps. Untrusted candidates go through env/judge.h.
EvalResult evaluate_raw_cuda(const TaskSpec& spec, DeviceTask& task, const std::string& source,
                             const RawCudaOptions& build, Verifier& verifier, const EvalOptions& opts, CUstream stream);
// The checks and timing shared by every kind of candidate; `r` carries what compiling it found.
EvalResult evaluate(const TaskSpec& spec, DeviceTask& task, Executable& exe, bool use_graph, Verifier& verifier,
                    const EvalOptions& opts, CUstream stream, EvalResult r);
// The same with another judge; `verifier` still poisons and fingerprints.
EvalResult evaluate(const TaskSpec& spec, DeviceTask& task, Executable& exe, bool use_graph, Verifier& verifier,
                    OutputJudge& judge, const EvalOptions& opts, CUstream stream, EvalResult r);

// What a process needs to evaluate candidates of one bundle: the task on the device (current context), the
// compiler with the kernel cache, the verifier and a stream of its own. `kforge evaluate` and `kforge worker`.
struct TaskSession {
  explicit TaskSession(Bundle b);
  ~TaskSession();
  TaskSession(const TaskSession&) = delete;
  TaskSession& operator=(const TaskSession&) = delete;
  Bundle bundle;
  DeviceTask task;
  Compiler compiler;
  Verifier verifier;
  CUstream stream = nullptr;
};

// Device-to-device copy bandwidth in GB/s (bytes read + bytes written), over a 1 GiB buffer.
double measure_copy_bandwidth(CUstream stream);

}  // namespace kforge
