// A plan's cuBLASLt step (codegen/emit_matmul.cpp describes its parameters): descriptors and the algorithm
// are set up once, when the plan loads; run() is one cublasLtMatmul on the plan's stream, which a CUDA
// graph captures like a kernel launch (the workspace is the plan's, so nothing is allocated while running).
#pragma once
#include <cublasLt.h>
#include <cuda.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge {

// Throws a UserError naming the call, file:line and cuBLASLt's status text.
void check_cublas(cublasStatus_t s, const char* call, const char* file, int line);
#define KF_CUBLAS(call) ::kforge::check_cublas((call), #call, __FILE__, __LINE__)

class LtMatmul {
 public:
  // Builds descriptors from `library` and asks the heuristic for its candidates; `step` names errors.
  LtMatmul(cublasLtHandle_t handle, const nlohmann::json& library, const std::string& step);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // args: device pointers of the step's buffers in PlanKernel::args order (a, b, c, [bias], workspace).
  void run(cublasLtHandle_t handle, const std::vector<CUdeviceptr>& args, CUstream stream);
  int candidates() const { return candidates_; }  // algorithms the heuristic returned
  int algo_used() const { return algo_used_; }     // the schedule's index, clamped to candidates() - 1

 private:
  std::string step_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t lt_a_ = nullptr, lt_b_ = nullptr, lt_c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool bias_ = false;
  bool device_alpha_ = false;  // alpha and beta read from the step's alpha buffer (fp16 and fp16x3 copies)
  bool accumulate_ = false;    // beta = 1: c += the product (a piece of a cut reduction)
  size_t offset_a_ = 0, offset_b_ = 0, offset_c_ = 0;  // bytes into the buffers (a triangular product's blocks)
  size_t workspace_bytes_ = 0;
  int candidates_ = 0, algo_used_ = 0;
};

}  // namespace kforge
