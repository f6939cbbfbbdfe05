// Runs a generated CUDA kernel on the CPU, for GPU-free tests of its indexing: the kernel text is compiled by the
// host C++ compiler under a few definitions that make plain CUDA C++ (a CUDA thread is a std::thread, a block's
// __shared__ arrays are statics all of its threads see, __syncthreads is a std::barrier) and launched as one
// block of `block` threads (blockIdx 0, gridDim 1: a grid-stride kernel walks all of its work); the arguments are
// float pointers, converted to each parameter's element type (i64 outputs). Only kernels in that subset run, with
// the device prelude's helpers (codegen/device_prelude.h) and float2/float4, warp shuffles that every thread of the
// block reaches together, but no atomics.
// run_on_cpu can launch a grid of blocks too, one block after the other (kernels whose blocks split their work
// by blockIdx and meet only through a later kernel).
#pragma once
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "ir/interpreter.h"

namespace kforge::testing {

// Whether a host C++ compiler (`c++`) is on PATH.
bool host_compiler_available();

// Builds `k` (its arguments all float pointers) and runs it once over `args` as `grid` blocks; throws
// std::runtime_error naming the file where the host compiler fails.
void run_on_cpu(const PlanKernel& k, const std::vector<float*>& args, int64_t grid = 1);

// Every buffer of plan `p` on the host, as float storage: the graph's inputs and params from `inputs` and
// `params` (f32; bool ones a byte an element), every other buffer poisoned (NaN; an f16 buffer's floats NaN in both
// halves), so that an element never written shows; `output` is the graph's first output's buffer.
struct HostPlanBuffers {
  std::vector<std::vector<float>> data;
  int output = -1;
};
HostPlanBuffers plan_buffers_on_cpu(const Plan& p, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& params = {});
// The values of the graph's first output in `h` (a 16-bit output's patterns converted).
std::vector<float> output_values(const Plan& p, const HostPlanBuffers& h);

// Runs single-kernel plan `p` with run_on_cpu: the graph's inputs and params from `inputs` and `params` (f32),
// every other buffer poisoned with NaN (an element never written shows); returns the graph's first output.
std::vector<float> run_plan_on_cpu(const Plan& p, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& params = {});

}  // namespace kforge::testing
