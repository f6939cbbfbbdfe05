// Scan kernels run on the CPU (common/cpu_kernel_runner.h): every scan kind (sum, prod, max, min, logsumexp; forward
// and reverse, the scanned dim last or in the middle) under both strategies matches the interpreter: a thread a
// line, and a block of four warps (the warp scan, the warps' totals and the carry across chunks, lines being longer
// than a chunk where they are). A host compile a schedule: one of each strategy.
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "common/cpu_kernel_runner.h"
#include "common/device_tensors.h"
#include "common/random_inputs.h"
#include "common/sample_graphs.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

TEST(ScanKernels, EveryKindAndScheduleMatchesTheInterpreter) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  for (const char* name : {"cumsum_reverse_middle", "cumprod", "cummax", "cummin", "logcumsumexp"}) {
    Graph g = graph_from_json(testing::sample_graph(name));
    std::mt19937_64 rng(5);
    auto inputs = testing::random_values(g, g.inputs, rng);
    std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
    KernelGroup grp = kernel_groups(g, true).at(0);
    ASSERT_EQ(grp.kind, GroupKind::scan) << name;
    std::set<Strategy> strategies;
    for (const KernelSchedule& ks : schedule_space(grp)) {
      const bool two_warps_of_chunks = ks.strategy == Strategy::block && ks.block == 128 && ks.items == 2;
      if (strategies.count(ks.strategy) || (ks.strategy == Strategy::block && !two_warps_of_chunks)) continue;
      Schedule s;
      s.kernels[grp.key] = ks;
      std::vector<float> got = testing::run_plan_on_cpu(lower(g, s), inputs);
      ASSERT_EQ(got.size(), want[0].data.size());
      EXPECT_EQ(testing::mismatches(got, want[0], 1e-4), "") << name << " " << to_json(s).dump();
      strategies.insert(ks.strategy);
      ++checked;
    }
    EXPECT_EQ(strategies.count(Strategy::block), 1u) << name << ": the warp scan and the carry were run";
  }
  EXPECT_EQ(checked, 10);
}

}  // namespace
}  // namespace kforge
