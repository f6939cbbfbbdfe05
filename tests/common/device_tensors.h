// Host tensors on the device for GPU tests: inputs and params uploaded, output buffers allocated to the
// shapes of the expected outputs, all bound as a plan's Bindings; and the check of an output against the
// interpreter's (double) values, reporting the first few elements outside atol = rtol = tol.
#pragma once
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "runtime/compiler.h"
#include "runtime/executable.h"
#include "runtime/executor.h"

namespace kforge::testing {

// What a GPU test of plans needs: the CUDA context, an sm_90 compiler with the default kernel cache, and a
// non-blocking stream, destroyed with it.
struct GpuSession {
  GpuSession();
  ~GpuSession();
  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;
  Compiler compiler;
  CUstream stream = nullptr;
};

struct DeviceTensors {
  DeviceTensors(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& params,
                const std::vector<HostTensor>& expected);
  std::vector<DeviceBuffer> inputs, params, outputs;
  Bindings bindings;
  void poison_outputs();
  // Output j downloaded, as values of its dtype.
  std::vector<double> output(size_t j, DType dtype) const;
};

// Runs `plan` on `dev` `runs` times, then once replayed from a CUDA graph, each time over poisoned outputs: "" when
// output 0 is within tol of `expected` (mismatches) every time, else which run differed and how.
std::string run_and_replay(LoadedPlan& plan, DeviceTensors& dev, CUstream stream, const HostTensor& expected, double tol,
                           int runs = 1);

// The root mean square of `t`'s values: the scale a tolerance of fp16's roundings carried through a chain is taken of.
double rms(const HostTensor& t);

// "" when every element of `got` is within tol + tol * |expected| (NaN where expected is NaN); else up to five
// "index i: got g, expected e".
std::string mismatches(const std::vector<double>& got, const HostTensor& expected, double tol);
// The same for f32 results (the CPU runner's).
std::string mismatches(const std::vector<float>& got, const HostTensor& expected, double tol);
// The largest |got - want| / (1 + |want| / scale) / scale over an output (infinite where any is NaN): the strict
// tier's measure on outputs of magnitude `scale` (products of inputs scaled by m: scale m^2).
double worst_scaled_error(const std::vector<float>& got, const HostTensor& expected, double scale);

}  // namespace kforge::testing
