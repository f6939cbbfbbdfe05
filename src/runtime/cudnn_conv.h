// A plan's cuDNN step (codegen/emit_conv.cpp describes its parameters), through cuDNN 9's backend graph API:
// when the plan loads, tensor and convolution descriptors, a one-operation graph (CONVOLUTION_FORWARD, or
// CONVOLUTION_BACKWARD_DATA for a transposed convolution; with the step's epilogue, the convolution into a
// virtual fp32 tensor and pointwise operations after it, fp16x3's scale, the bias, the activation, for cuDNN's
// runtime-fusion engines; fp16x3's fp16 x and w with an fp32 y, where no engine takes that directly, the same
// with an identity operation), the heuristic's engine configurations (mode A;
// FALLBACK when none of A's is usable) and the execution plan of the schedule's engine are built; run() binds
// the step's buffers in a variant pack and calls cudnnBackendExecute on the plan's stream, which a CUDA graph
// captures like a kernel launch (the workspace is the plan's: nothing is allocated while running).
#pragma once
#include <cuda.h>
#include <cudnn.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge {

// Throws a UserError naming the call, file:line and cuDNN's status text.
void check_cudnn(cudnnStatus_t s, const char* call, const char* file, int line);
#define KF_CUDNN(call) ::kforge::check_cudnn((call), #call, __FILE__, __LINE__)

// Builds and finalizes the step's tensor, convolution and CONVOLUTION_FORWARD descriptors (for fp16x3 also the
// form through a virtual fp32 tensor and an identity pointwise op), then drops them: what CudnnConv does first,
// host-side only (no GPU or handle needed); UserError naming the call cuDNN refused.
void finalize_conv_operation(const nlohmann::json& library, const std::string& step);

class CudnnConv {
 public:
  // Builds the graph and the execution plan of engine `algo` among those `precision` allows (fp32: none
  // whose numerical notes say tensor cores, down-converted inputs or reduced-precision reduction, i.e. no
  // TF32), clamped to the last one that finalizes within the workspace cap; UserError when none does.
  CudnnConv(cudnnHandle_t handle, const nlohmann::json& library, const std::string& step);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // args: device pointers of the step's buffers in PlanKernel::args order (x, w, y, workspace, then the
  // epilogue's bias and scale where it has them).
  void run(cudnnHandle_t handle, const std::vector<CUdeviceptr>& args, CUstream stream);
  int algo_used() const { return algo_used_; }           // index among the allowed engines
  int offered() const { return offered_; }               // engine configurations the heuristic offered
  int64_t workspace_bytes() const { return workspace_; }  // what the chosen engine needs

 private:
  std::string step_;
  cudnnBackendDescriptor_t plan_ = nullptr;
  std::vector<cudnnBackendDescriptor_t> keep_;  // the operation, graph and engine config the plan was made from
  int algo_used_ = 0, offered_ = 0;
  int64_t workspace_ = 0;
  bool has_bias_ = false, has_scale_ = false;  // the epilogue's buffers, after the workspace in run()'s args
};

}  // namespace kforge
