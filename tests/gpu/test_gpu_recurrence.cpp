// Recurrences (ir/recurrence.h) as one kernel a layer on the GPU, under every schedule of their space, against
// the CPU interpreter in the strict tier, run directly and replayed from a CUDA graph. The unit-split persistent
// kernel (codegen/emit_recurrence.cpp): the hidden state read back through L2 by every block between steps,
// weights in shared memory or read from L2, the hidden state staged in pieces, a cooperative launch captured. The
// batch-split kernel (codegen/emit_recurrence_cluster.cpp): clusters handing the state through shared memory.
#include <gtest/gtest.h>

#include <functional>
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

// Each case's plans under `schedules_of(analysis)`, run twice directly (the unit-split kernel's tags carried from
// launch to launch) and replayed, against the interpreter; how many were checked.
int check_cases(const std::function<std::vector<Schedule>(const GraphAnalysis&)>& schedules_of) {
  testing::GpuSession gpu;
  int checked = 0;
  for (const auto& c : testing::gpu_recurrence_cases()) {
    Graph g = graph_from_json(testing::recurrence_graph(c));
    GraphAnalysis analysis(g);
    const std::vector<Schedule> schedules = schedules_of(analysis);
    if (schedules.empty()) continue;
    std::mt19937_64 rng(3);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    auto expected = interpret(primitive_graph(g), inputs, params);
    testing::DeviceTensors dev(inputs, params, expected);
    for (const Schedule& s : schedules) {
      LoadedPlan lp(lower(analysis, s), gpu.compiler);
      EXPECT_EQ(testing::run_and_replay(lp, dev, gpu.stream, expected[0], 1e-4, 2), "") << c.name << " schedule " << to_json(s).dump();
      ++checked;
    }
  }
  return checked;
}

// Every schedule of `strategy` in each case's space.
int check_every_schedule(Strategy strategy) {
  return check_cases([&](const GraphAnalysis& analysis) {
    const KernelGroup& grp = testing::group_of_kind(analysis, GroupKind::recurrence);
    std::vector<Schedule> out;
    for (const KernelSchedule& ks : schedule_space(grp))
      if (ks.strategy == strategy) out.emplace_back().kernels[grp.key] = ks;
    return out;
  });
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
  const int checked = check_cases([](const GraphAnalysis& analysis) {
    Schedule s;
    s.unroll_recurrences = true;
    return analysis.has_unrolled_form() ? std::vector<Schedule>{s} : std::vector<Schedule>{};
  });
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace kforge
