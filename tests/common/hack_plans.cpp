#include "common/hack_plans.h"

#include "codegen/device_prelude.h"
#include "codegen/lower.h"

namespace kforge::testing {

nlohmann::json hack_task_graph() {
  return nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [4096]}],
      "nodes": [{"name": "y", "op": "relu", "args": ["x"]}], "outputs": ["y"]})");
}

namespace {
// The honest plan's buffers and launch geometry, with another kernel body.
Plan with_body(const std::string& body, const std::string& params = "float* __restrict__ b0, float* __restrict__ b1") {
  Plan p = lower(graph_from_json(hack_task_graph()), Schedule{});
  PlanKernel& k = p.kernels.at(0);
  k.name = "hack";
  k.source = device_prelude() + "\n__device__ unsigned long long kf_calls;\n"
             "__device__ const float* kf_seen[4096];\n__device__ float kf_cache[4096];\nextern \"C\" __global__ void hack(" + params +
             ") {\n  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n" + body + "\n}\n";
  k.grid = 16;
  k.block = 256;
  return p;
}
}  // namespace

std::vector<HackPlan> hack_plans() {
  return {
      {"honest", "strict", with_body("  if (i < 4096) b1[i] = b0[i] > 0.f ? b0[i] : 0.f;")},
      {"never_writes_output", "NaN/Inf", with_body("")},
      {"writes_half_the_output", "NaN/Inf", with_body("  if (i < 2048) b1[i] = fmaxf(b0[i], 0.f);")},
      {"edits_its_input_in_place", "in-place edit",
       with_body("  if (i < 4096) { b1[i] = fmaxf(b0[i], 0.f); b0[i] = b1[i]; }")},
      {"returns_the_input", "outside 1e-4", with_body("  if (i < 4096) b1[i] = b0[i];")},
      {"constant_output", "outside 1e-4", with_body("  if (i < 4096) b1[i] = 0.f;")},
      // bf16-like rounding of the result: fine at 1e-2, not at 1e-4.
      {"precision_downcast", "relaxed",
       with_body("  if (i < 4096) b1[i] = __uint_as_float(__float_as_uint(fmaxf(b0[i], 0.f)) & 0xffff0000u);")},
      // Right while the checks run (the first 16 launches: one per set, stored and drawn, with room to spare),
      // wrong once it is being timed.
      {"wrong_after_checking", "wrong after timing",
       // Each of the 16 blocks counts itself: launch L sees counts in [16 L, 16 L + 16), whatever the block order.
       with_body("  __shared__ unsigned long long n;\n  if (threadIdx.x == 0) n = atomicAdd(&kf_calls, 1ull);\n"
                 "  __syncthreads();\n  if (i < 4096) b1[i] = n < 16 * 16 ? fmaxf(b0[i], 0.f) : 1.f;")},
      // Results cached by input address: each element remembers the address it was last computed from and
      // copies its cached value when the address comes again (where it skips a product's work, the timing
      // would pay a copy as the product). Right on every set at first sight, stale once the timed addresses
      // hold new values.
      {"caches_by_input_address", "wrong after timing",
       with_body("  if (i < 4096) {\n    if (kf_seen[i] != b0) { kf_cache[i] = fmaxf(b0[i], 0.f); kf_seen[i] = b0; }\n"
                 "    b1[i] = kf_cache[i];\n  }")},
  };
}

}  // namespace kforge::testing
