// The trusted end of an untrusted candidate's evaluation. The candidate (a plan with its own source, a raw CUDA
// file or its built object) runs in `kforge run-candidate` (env/candidate_runner.h) inside a sandbox with a minimal
// root: it sees the task's graph, params and inputs, never a reference, a tolerance, the bundle's folder, the
// database or the service. Each run's outputs come back over a pipe and are compared here, on the host; the
// verdict and the reward are computed here from what this side saw, and nothing the candidate writes to a file
// is ever read as a result. docs/interfaces.md ("Threat model") says what the candidate can and cannot reach.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

#include "env/bundle.h"
#include "env/candidate_link.h"
#include "env/evaluator.h"
#include "env/gpu_lock.h"
#include "env/python_runtime.h"
#include "env/sandbox.h"
#include "ir/error.h"

namespace kforge {

// The Verifier's comparison (env/verify.h) on host memory, element for element the same rule: float32 compared
// in float32 with atol = rtol per tier, NaN/Inf a failure unless both are the same infinity; other dtypes exact.
CompareResult compare_on_host(const void* out, const void* ref, int64_t n, DType dtype, const Tolerance& tol);

// The protocol's trusted end. The candidate's process is told the task (task_header()), then drives the
// evaluation's steps (env/evaluator.cpp) and reports each: every output set for judging in the expected order
// (sets 0..N-1: the stored, the fresh, those beyond get_inputs' distribution; then the check after timing on
// the last of get_inputs' distribution), the timing, and the rest. This side checks the order,
// compares every output, bounds the reported time by its own clock, and pays.
struct NotEvaluated : UserError {
  using UserError::UserError;
};

class TrustedJudge {
 public:
  TrustedJudge(const Bundle& b, const EvalOptions& eo);
  nlohmann::json task_header() const;
  // Reads the candidate's frames from `in`, answers on `out_fd`; ends at its "done" frame, at the end of the
  // stream, or at a protocol violation (named in the log). `timeout_s` bounds each wait. Throws NotEvaluated
  // when the process fails before it says "ready", which it does before the candidate's code loads: a missing
  // driver or a task that does not fit is the environment's failure, not the candidate's.
  // The candidate's process asks for its turn on the GPU ("turn") before its checks; this side takes the lock
  // for it (the lock file never enters the candidate's sandbox) and leaves it in `turn.held`, for the caller to
  // keep until the candidate's process is gone. Within its turn each step must come within kStepInTurnS.
  struct Turn {
    std::string lock_path;                // flock; "" = none
    std::optional<GpuLock> held;
    std::function<void()> waiting_tick;   // while another holds the GPU: limits, but not the candidate's clock
    std::function<void()> started;        // once held
  };
  static constexpr double kStepInTurnS = 120;
  EvalResult run(FrameReader& in, int out_fd, double timeout_s, const std::function<void()>& tick, Turn& turn);
  EvalResult run(FrameReader& in, int out_fd, double timeout_s, const std::function<void()>& tick = {}) {
    Turn none;
    return run(in, out_fd, timeout_s, tick, none);
  }

 private:
  bool judge_set(int s, const std::string& payload, EvalResult& r, bool& strict);
  nlohmann::json drawn_header() const;  // which drawn sets lie beyond get_inputs' distribution, not how
  const Bundle& bundle_;
  EvalOptions eo_;
};

// A ModelNew runs in Python (python/kforge/modelnew_candidate.py), the others in `kforge run-candidate`.
enum class CandidateKind { plan, cuda_source, shared_object, modelnew };

struct UntrustedRunOptions {
  // The candidate's sandbox. Forced: minimal_root (and gpu unless `cpu`). scratch_dir (required) is its only
  // writable folder.
  SandboxOptions sandbox;
  std::string kforge_exe;          // the binary whose `run-candidate` runs inside
  std::string gpu_lock;            // taken by the judge for the candidate's turn; "" = none
  std::string trusted_cache_dir;   // NVRTC kernels written by trusted code (the verifier's): shown read-only
  // torch/extension.h precompiled (env/torch_pch.h), built there before a ModelNew's first evaluation on the GPU
  // and shown to it read-only: its load_inline builds take seconds. "" = none (they parse torch's headers).
  std::string torch_pch_dir;
  // A ModelNew only: its Python, CUDA-Agent's rules ("cuda-agent": no torch operator inside forward), and the
  // CPU (checked only, never timed: eo.timing.trials is 0 there).
  PythonRuntime python;
  std::string rules = "none";
  bool cpu = false;
};

// One untrusted candidate (the file at `path`) evaluated with its code in a process of its own. `eo.copy_gbs`
// must come from a trusted measurement (the roofline floor). Never throws for what the candidate does.
EvalResult evaluate_untrusted(const Bundle& b, CandidateKind kind, const std::string& path, const EvalOptions& eo,
                              const UntrustedRunOptions& o);

}  // namespace kforge
