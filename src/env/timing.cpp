#include "env/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "runtime/driver.h"

namespace kforge {

Stats summarize(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  s.trials = int(ms.size());
  s.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size());
  double var = 0;
  for (double m : ms) var += (m - s.mean_ms) * (m - s.mean_ms);
  s.std_ms = std::sqrt(var / double(ms.size()));
  std::sort(ms.begin(), ms.end());
  s.min_ms = ms.front();
  s.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return s;
}

namespace {

// What every trial starts from: no input in L2. A write of flush_bytes evicts it; and (hack catalogue,
// persisting-L2 tricks) a candidate may mark its data persisting in L2 (an access policy window), which the
// flush would not evict, so every line goes back to normal first, where the device has persisting L2 at all
// (the first call says).
class ColdL2 {
 public:
  explicit ColdL2(size_t bytes) : buffer_(bytes), persisting_(driver().cuCtxResetPersistingL2Cache() == CUDA_SUCCESS) {}
  void flush(int trial, CUstream stream) const {
    if (persisting_) KF_CU(driver().cuCtxResetPersistingL2Cache());
    KF_CU(driver().cuMemsetD32Async(buffer_.get(), uint32_t(trial), buffer_.bytes() / 4, stream));
  }

 private:
  DeviceBuffer buffer_;
  bool persisting_;
};

}  // namespace

TimingResult time_on_gpu(const std::function<void(CUstream)>& fn, CUstream stream, const TimingOptions& o) {
  const Driver& d = driver();
  CUevent start, stop;
  KF_CU(d.cuEventCreate(&start, CU_EVENT_DEFAULT));
  KF_CU(d.cuEventCreate(&stop, CU_EVENT_DEFAULT));
  for (int i = 0; i < o.warmup; ++i) fn(stream);
  KF_CU(d.cuStreamSynchronize(stream));
  std::vector<double> ms;
  const ColdL2 cold(o.flush_bytes);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.trials + 1; ++i) {
    cold.flush(i, stream);
    KF_CU(d.cuEventRecord(start, stream));
    fn(stream);
    KF_CU(d.cuEventRecord(stop, stream));
    KF_CU(d.cuEventSynchronize(stop));
    float t = 0;
    KF_CU(d.cuEventElapsedTime(&t, start, stop));
    if (i > 0) ms.push_back(t);
  }
  auto wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  d.cuEventDestroy(start);
  d.cuEventDestroy(stop);
  TimingResult r;
  r.stats = summarize(ms);
  r.wall_ms_per_trial = wall / double(o.trials + 1);
  return r;
}

std::vector<Stats> time_steps(LoadedPlan& plan, const Bindings& b, CUstream stream, const TimingOptions& o) {
  const Driver& d = driver();
  plan.run(b, stream);  // checks the bindings once
  for (int i = 0; i < o.warmup; ++i) plan.run(b, stream);
  KF_CU(d.cuStreamSynchronize(stream));
  const size_t n = plan.steps();
  std::vector<CUevent> marks(n + 1);
  for (auto& e : marks) KF_CU(d.cuEventCreate(&e, CU_EVENT_DEFAULT));
  std::vector<std::vector<double>> ms(n);
  const ColdL2 cold(o.flush_bytes);
  for (int t = 0; t < o.trials + 1; ++t) {
    cold.flush(t, stream);
    KF_CU(d.cuEventRecord(marks[0], stream));
    for (size_t i = 0; i < n; ++i) {
      plan.run_step(i, b, stream);
      KF_CU(d.cuEventRecord(marks[i + 1], stream));
    }
    KF_CU(d.cuEventSynchronize(marks[n]));
    for (size_t i = 0; t > 0 && i < n; ++i) {
      float step = 0;
      KF_CU(d.cuEventElapsedTime(&step, marks[i], marks[i + 1]));
      ms[i].push_back(step);
    }
  }
  for (auto& e : marks) d.cuEventDestroy(e);
  std::vector<Stats> out;
  for (auto& m : ms) out.push_back(summarize(std::move(m)));
  return out;
}

}  // namespace kforge
