// Loads a plan onto the GPU (compile through the cache, load modules, set up library steps (cuBLASLt, cuDNN), allocate
// temporaries) and runs it on a stream, directly or as a captured CUDA graph. The caller owns inputs,
// params and outputs.
#pragma once
#include <cuda.h>

#include <memory>
#include <vector>

#include "codegen/plan.h"
#include "runtime/compiler.h"
#include "runtime/cublaslt_matmul.h"
#include "runtime/cudnn_conv.h"
#include "runtime/executable.h"

namespace kforge {

class LoadedPlan : public Executable {
 public:
  LoadedPlan(Plan plan, const Compiler& compiler);
  ~LoadedPlan() override;
  LoadedPlan(const LoadedPlan&) = delete;
  LoadedPlan& operator=(const LoadedPlan&) = delete;

  // Launches every kernel in order on `stream`. Checks the bindings' counts and 16-byte alignment.
  void run(const Bindings& b, CUstream stream) override;
  // One step of run() alone (the bindings checked by an earlier run()): a per-step profile times them apart
  // (env/timing.h, time_steps).
  void run_step(size_t i, const Bindings& b, CUstream stream);
  size_t steps() const { return plan_.kernels.size(); }

  const Plan& plan() const { return plan_; }
  // Per library step, what the library made of the schedule's `algo`, in launch order: [{"step", "group", "library":
  // "cublaslt"|"cudnn", "precision", "layout" and "epilogue" (a convolution's; "" for a product), "requested": the
  // schedule's index, "algo": the index used (clamped to the last usable one), "offered": how many it offered}].
  // Sweeps over algorithms, and the search's walk along the list, stop where the index no longer moves
  // (python/kforge/library_sweep.py, search/proposer.h).
  nlohmann::json library_steps() const;
  double compile_ms = 0;  // NVRTC time spent on this plan (0 when every kernel was cached)
  int cache_hits = 0;

 private:
  CUdeviceptr pointer_of(int buffer, const Bindings& b) const;

  Plan plan_;
  std::vector<CUmodule> modules_;
  std::vector<CUfunction> functions_;            // per step; null for library steps
  std::vector<int64_t> grids_;                   // per step: the launch's blocks (PlanKernel::persistent)
  cublasLtHandle_t lt_ = nullptr;                 // created once, for plans with cuBLASLt steps
  std::vector<std::unique_ptr<LtMatmul>> lt_steps_;  // per step; null for other steps
  cudnnHandle_t dnn_ = nullptr;                   // created once, for plans with cuDNN steps (bound to the
                                                  // run's stream at each step)
  std::vector<std::unique_ptr<CudnnConv>> dnn_steps_;  // per step; null for other steps
  std::vector<CUdeviceptr> temps_;  // per buffer (0 for non-temps)
};

// RAII device memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  CUdeviceptr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace kforge
