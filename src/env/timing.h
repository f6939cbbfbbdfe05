// The native protocol (DESIGN.md): the plan run from C++, CUDA events on the stream around each trial,
// a 256 MB write before each trial so no trial starts with its data in the 60 MB L2, warm-ups first and
// the first timed trial dropped. Events are cross-checked against the host clock with a synchronize:
// if the events report far less time than the wall clock allows, something ran outside the events.
#pragma once
#include <cuda.h>

#include <functional>

#include "env/bundle.h"
#include "runtime/executor.h"

namespace kforge {

struct TimingOptions {
  int warmup = 3;
  int trials = 20;
  size_t flush_bytes = 256ull << 20;
};

struct TimingResult {
  Stats stats;
  double wall_ms_per_trial = 0;  // host clock around the synchronized trial loop, flush included
};

// Times `fn(stream)` and returns the statistics over trials (first trial dropped).
TimingResult time_on_gpu(const std::function<void(CUstream)>& fn, CUstream stream, const TimingOptions& opts);

Stats summarize(std::vector<double> ms);

// Each step's own time (milliseconds, launch order): the plan launched step by step as LoadedPlan::run does, an
// event between every two steps, the L2 flushed before each trial as above; only the first step starts cold, as
// in a real run. Where a plan's time goes (kforge report's per-kernel roofline), not its time: the sum leaves out
// what a CUDA graph saves on launches.
std::vector<Stats> time_steps(LoadedPlan& plan, const Bindings& b, CUstream stream, const TimingOptions& opts);

}  // namespace kforge
