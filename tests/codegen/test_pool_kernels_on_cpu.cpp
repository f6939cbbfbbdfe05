// Pooling kernels run on the CPU (common/cpu_kernel_runner.h): every schedule of the pooling samples (a thread's
// `items` outputs a block apart, the last chunk partial) matches the interpreter, padding and dilation included,
// ceil_mode's partial last windows and adaptive windows of unequal widths.
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

TEST(PoolKernels, EveryScheduleMatchesTheInterpreter) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  for (const char* name : {"max_pool", "avg_pool", "avg_pool1d_exclude_pad", "avg_pool_ceil_mode", "adaptive_max_pool"}) {
    Graph g = graph_from_json(testing::sample_graph(name));
    std::mt19937_64 rng(3);
    auto inputs = testing::random_values(g, g.inputs, rng);
    std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
    KernelGroup grp = kernel_groups(g, true).at(0);
    ASSERT_EQ(grp.kind, GroupKind::pool) << name;
    for (const KernelSchedule& ks : schedule_space(grp)) {
      if (ks.block > 128) continue;  // a CPU thread per CUDA thread: the items are what vary the indexing
      Schedule s;
      s.kernels[grp.key] = ks;
      std::vector<float> got = testing::run_plan_on_cpu(lower(g, s), inputs);
      ASSERT_EQ(got.size(), want[0].data.size());
      EXPECT_EQ(testing::mismatches(got, want[0], 1e-5), "") << name << " " << to_json(s).dump();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20);  // five samples, items 1, 2, 4 and 8
}

// A pool of a half-precision task's input reads the 16-bit values as stored (no stored cast), widening each.
TEST(PoolKernels, AHalfPrecisionInputIsReadAsStored) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  Graph g = graph_from_json(testing::sample_graph("half_max_pool"));
  std::mt19937_64 rng(3);
  auto inputs = testing::random_values(g, g.inputs, rng);
  std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
  Plan p = lower(g, {});
  ASSERT_EQ(p.kernels.size(), 1u) << "the pool reads x itself: no kernel stores its cast";
  EXPECT_NE(p.kernels[0].source.find("kf_from_f16(b"), std::string::npos) << p.kernels[0].source;
  EXPECT_EQ(testing::mismatches(testing::run_plan_on_cpu(p, inputs), want[0], 1e-5), "");  // max of f16 values: exact
}

}  // namespace
}  // namespace kforge
