// Recurrences (ir/recurrence.h) as one persistent kernel a layer on the GPU (codegen/emit_recurrence.cpp), under
// every schedule of their space, against the CPU interpreter in the strict tier: the grid barrier between steps,
// the hidden state read back through L2 by every block, weights in shared memory or read from L2, the hidden
// state staged in pieces; run directly and replayed from a CUDA graph (a cooperative launch captured).
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "common/device_tensors.h"
#include "common/kernel_groups.h"
#include "common/random_inputs.h"
#include "common/recurrence_graphs.h"
#include "ir/interpreter.h"
#include "runtime/driver.h"
#include "runtime/executor.h"

namespace kforge {
namespace {

TEST(GpuRecurrence, EveryScheduleMatchesTheInterpreter) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  Compiler compiler({"sm_90", default_cache_dir(), {}});
  ensure_context();
  CUstream stream;
  KF_CU(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  int checked = 0;
  for (const auto& c : testing::gpu_recurrence_cases()) {
    Graph g = graph_from_json(testing::recurrence_graph(c));
    std::mt19937_64 rng(3);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    auto expected = interpret(primitive_graph(g), inputs, params);
    testing::DeviceTensors dev(inputs, params, expected);
    GraphAnalysis analysis(g);
    const KernelGroup& grp = testing::group_of_kind(analysis, GroupKind::recurrence);
    for (const KernelSchedule& ks : schedule_space(grp)) {
      Schedule s;
      s.kernels[grp.key] = ks;
      LoadedPlan lp(lower(analysis, s), compiler);
      // Twice directly: the tags carried from launch to launch.
      ASSERT_EQ(testing::run_and_replay(lp, dev, stream, expected[0], 1e-4, 2), "") << c.name << " schedule " << to_json(ks).dump();
      ++checked;
    }
  }
  driver().cuStreamDestroy(stream);
  EXPECT_GE(checked, 40);
}

}  // namespace
}  // namespace kforge
