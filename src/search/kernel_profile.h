// Where a plan's time goes, group by group (kforge report's roofline of every kernel): each kernel group of the
// plan (one op, or a chain fused into one kernel: codegen/partition.h) with its steps' measured times, the bytes its
// steps bind and the FLOPs of its product, convolution, attention or recurrence. Bytes count every buffer a step
// binds once (read or written at least once), a library step's workspace left out: a floor, as the plan's own
// min_bytes is. FLOPs are search/features.h's counts of the group's anchor op; elementwise arithmetic, a row
// kernel's sums and a pool's windows count none (their kernels are bound by memory).
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/analysis.h"
#include "codegen/plan.h"
#include "env/bundle.h"

namespace kforge {

// [{"group", "op" (the group's kind), "steps": [{"name", "kind" (nvrtc | cublaslt | cudnn), "ms"}], "ms" (its steps'
// median times summed), "bytes", "flops"}], in launch order. `step_times`: one per plan step (env/timing.h,
// time_steps); an empty list gives the bytes and FLOPs alone (ms 0).
nlohmann::json kernel_profile(const GraphAnalysis& analysis, const Plan& plan, const std::vector<Stats>& step_times);

}  // namespace kforge
