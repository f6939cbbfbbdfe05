// Recurrences (ir/recurrence.h) as one kernel a layer on the GPU, under every schedule of their space, against
// the CPU interpreter in the strict tier, run directly and replayed from a CUDA graph. The unit-split persistent
// kernel (codegen/emit_recurrence.cpp): the hidden state read back through L2 by every block between steps,
// weights in shared memory or read from L2, the hidden state staged in pieces, a cooperative launch captured. The
// batch-split kernel (codegen/emit_recurrence_cluster.cpp): clusters handing the state through shared memory.
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

// Every schedule of `strategy` in each case's space, run twice directly and replayed, against the interpreter.
int check_every_schedule(Strategy strategy) {
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
      if (ks.strategy != strategy) continue;
      Schedule s;
      s.kernels[grp.key] = ks;
      LoadedPlan lp(lower(analysis, s), compiler);
      // Twice directly: the unit-split kernel's tags carried from launch to launch.
      EXPECT_EQ(testing::run_and_replay(lp, dev, stream, expected[0], 1e-4, 2), "") << c.name << " schedule " << to_json(ks).dump();
      ++checked;
    }
  }
  driver().cuStreamDestroy(stream);
  return checked;
}

TEST(GpuRecurrence, EveryScheduleMatchesTheInterpreter) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  EXPECT_GE(check_every_schedule(Strategy::block), 40);
}

// The batch-split kernel: clusters of 1-8 blocks handing the state through distributed shared memory, batch slices
// of 1-8 rows (the last one part empty where they do not divide the batch).
TEST(GpuRecurrence, EveryBatchSplitScheduleMatchesTheInterpreter) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  EXPECT_GE(check_every_schedule(Strategy::tile), 100);
}

// The search's unrolled form (Schedule::unroll_recurrences): a cuBLASLt product of the state and one cell kernel a
// step, the cell reading its step's input share in place; both directions, zero and given states, every cell kind.
TEST(GpuRecurrence, TheUnrolledFormMatchesTheInterpreter) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  Compiler compiler({"sm_90", default_cache_dir(), {}});
  ensure_context();
  CUstream stream;
  KF_CU(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  int checked = 0;
  for (const auto& c : testing::gpu_recurrence_cases()) {
    Graph g = graph_from_json(testing::recurrence_graph(c));
    GraphAnalysis analysis(g);
    if (!analysis.has_unrolled_form()) continue;
    std::mt19937_64 rng(5);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    auto expected = interpret(primitive_graph(g), inputs, params);
    testing::DeviceTensors dev(inputs, params, expected);
    Schedule s;
    s.unroll_recurrences = true;
    LoadedPlan lp(lower(analysis, s), compiler);
    EXPECT_EQ(testing::run_and_replay(lp, dev, stream, expected[0], 1e-4, 2), "") << c.name;
    ++checked;
  }
  driver().cuStreamDestroy(stream);
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace kforge
