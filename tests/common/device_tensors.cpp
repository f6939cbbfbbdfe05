#include "common/device_tensors.h"

#include <cmath>

#include "common/random_inputs.h"
#include "env/verify.h"
#include "runtime/driver.h"

namespace kforge::testing {

GpuSession::GpuSession() : compiler({"sm_90", default_cache_dir(), {}}) {
  ensure_context();
  KF_CU(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
}

GpuSession::~GpuSession() { driver().cuStreamDestroy(stream); }

namespace {
void upload(const std::vector<HostTensor>& ts, std::vector<DeviceBuffer>& bufs, std::vector<CUdeviceptr>& ptrs) {
  for (auto& t : ts) {
    std::string bytes = to_bytes(t);
    bufs.emplace_back(bytes.size());
    bufs.back().upload(bytes.data(), bytes.size());
    ptrs.push_back(bufs.back().get());
  }
}
}  // namespace

DeviceTensors::DeviceTensors(const std::vector<HostTensor>& in, const std::vector<HostTensor>& par,
                             const std::vector<HostTensor>& expected) {
  upload(in, inputs, bindings.inputs);
  upload(par, params, bindings.params);
  for (auto& t : expected) {
    outputs.emplace_back(size_t(numel(t.type.shape)) * dtype_size(t.type.dtype));
    bindings.outputs.push_back(outputs.back().get());
  }
}

void DeviceTensors::poison_outputs() {
  for (auto& o : outputs) Verifier::poison(o.get(), o.bytes(), nullptr);
}

std::vector<double> DeviceTensors::output(size_t j, DType dtype) const {
  std::string bytes(outputs[j].bytes(), '\0');
  outputs[j].download(bytes.data(), bytes.size());
  return from_bytes(bytes, dtype);
}

std::string run_and_replay(LoadedPlan& plan, DeviceTensors& dev, CUstream stream, const HostTensor& expected, double tol,
                           int runs) {
  for (int run = 0; run <= runs; ++run) {
    const bool replay = run == runs;
    if (replay && !plan.capture(dev.bindings, stream)) return "the plan was not captured in a CUDA graph";
    dev.poison_outputs();
    KF_CU(driver().cuCtxSynchronize());  // the poison runs on the legacy stream, which does not order this one
    if (replay) plan.replay(stream);
    else plan.run(dev.bindings, stream);
    KF_CU(driver().cuStreamSynchronize(stream));
    const std::string m = mismatches(dev.output(0, expected.type.dtype), expected, tol);
    if (!m.empty()) return (replay ? std::string("replayed: ") : "run " + std::to_string(run) + ": ") + m;
  }
  return "";
}

double rms(const HostTensor& t) {
  double squares = 0;
  for (double v : t.data) squares += v * v;
  return t.data.empty() ? 0.0 : std::sqrt(squares / double(t.data.size()));
}

std::string mismatches(const std::vector<double>& got, const HostTensor& expected, double tol) {
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < got.size() && shown < 5; ++i) {
    double e = expected.data[i];
    if (std::isnan(e) && std::isnan(got[i])) continue;  // NaN where the reference has it (a fully masked row)
    if (!(std::fabs(got[i] - e) <= tol + tol * std::fabs(e))) {
      out += "index " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", expected " + std::to_string(e) + "\n";
      ++shown;
    }
  }
  return out;
}

std::string mismatches(const std::vector<float>& got, const HostTensor& expected, double tol) {
  return mismatches(std::vector<double>(got.begin(), got.end()), expected, tol);
}

double worst_scaled_error(const std::vector<float>& got, const HostTensor& expected, double scale) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = expected.data[i];
    worst = std::max(worst, std::abs(double(got[i]) - want) / scale / (1 + std::abs(want) / scale));
  }
  return std::isnan(worst) ? INFINITY : worst;
}

}  // namespace kforge::testing
