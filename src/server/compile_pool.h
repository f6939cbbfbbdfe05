// Builds raw CUDA candidates (nvcc, in the sandbox, with a time limit of its own) on the CPU cores while
// the GPU workers evaluate earlier jobs: the compile of job N+1 overlaps the GPU time of job N. Shared
// objects are cached by a hash of source and flags (env/raw_cuda.h), so a resubmitted candidate is not
// built again. A built job moves to `compiled` for a GPU worker; a job that does not build is answered here
// (tier failed, reward -1, nvcc's log).
#pragma once
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "env/raw_cuda.h"
#include "server/job_store.h"

namespace kforge {

class CompilePool {
 public:
  // `built` is called after each job moves to `compiled` (to wake the GPU workers).
  CompilePool(JobStore& store, RawCudaOptions build, int threads, std::function<void()> built);
  ~CompilePool();

 private:
  void loop();
  void compile(const Job& job);

  JobStore& store_;
  RawCudaOptions build_;
  std::function<void()> built_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

}  // namespace kforge
