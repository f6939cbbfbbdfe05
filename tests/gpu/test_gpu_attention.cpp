// Attention as one kernel on the GPU (codegen/emit_attention.cpp), under every schedule of its space, against the
// CPU interpreter of the unfused graph in the strict tier (TF32 and 16-bit forms at their precision): masks of every
// form (causal tiles skipped), stored and transposed K, shared V, head dims 4 to 256, many query and key tiles, f16
// and bf16 tasks; run directly and replayed from a CUDA graph.
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "common/attention_graphs.h"
#include "common/device_tensors.h"
#include "common/kernel_groups.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/interpreter.h"
#include "runtime/driver.h"
#include "runtime/executor.h"

namespace kforge {
namespace {

TEST(GpuAttention, EveryScheduleMatchesTheInterpreter) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  testing::GpuSession gpu;
  Compiler& compiler = gpu.compiler;
  CUstream stream = gpu.stream;
  int checked = 0;
  for (const testing::AttentionCase& c : testing::gpu_attention_cases()) {
    const Graph g = graph_from_json(testing::attention_graph(c));
    std::mt19937_64 rng(5);
    const auto inputs = testing::random_values(g, g.inputs, rng);
    const auto expected = interpret(decompose(g), inputs, {});
    testing::DeviceTensors dev(inputs, {}, expected);
    GraphAnalysis analysis(g);
    const KernelGroup& grp = testing::group_of_kind(analysis, GroupKind::attention);
    for (const KernelSchedule& ks : schedule_space(grp)) {
      Schedule s;
      s.kernels[grp.key] = ks;
      LoadedPlan lp(lower(analysis, s), compiler);
      // TF32: 11 significant bits an operand; 16-bit results: an ulp of the dtype, and fp16's rounded probabilities
      // (bf16's in two parts: its result's own rounding, half an ulp, dominates).
      const double tol = c.dtype == "bf16" ? 5e-3 : c.dtype == "f16" ? 3e-3 : ks.precision == Precision::tf32 ? 5e-3 : 1e-4;
      ASSERT_EQ(testing::run_and_replay(lp, dev, stream, expected[0], tol), "") << c.name << " schedule " << to_json(ks).dump();
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

}  // namespace
}  // namespace kforge
