// `kforge run-candidate`: the untrusted end of an evaluation (env/judge.h has the trusted one). Runs inside the
// candidate's sandbox, which shows it the task's params and inputs and nothing of the references. It loads the
// candidate (compiling a plan's kernels with NVRTC or a raw CUDA file with nvcc, here, under the same sandbox),
// then takes the evaluation's steps of env/evaluator.cpp with a judge that sends every output to the trusted
// process and waits for its answer. Protocol on stdin/stdout; the candidate's own writes to standard output go
// to stderr (the link keeps a descriptor of its own).
#pragma once
#include <string>

namespace kforge {

struct RunCandidateArgs {
  std::string inputs;  // a folder with params/<i>.bin and sets/<k>/in<i>.bin
  std::string plan, cuda, so;  // exactly one: a plan JSON with its sources, a raw CUDA file, a built object
  std::string trusted_cache;   // NVRTC kernels of trusted code, read-only ("" = none)
};

// Returns the process's exit code; never returns for the candidate's failures (they are reported as frames).
int run_candidate(const RunCandidateArgs& a);

}  // namespace kforge
