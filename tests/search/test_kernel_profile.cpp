// The per-group breakdown of a plan (search/kernel_profile.h) that kforge report draws as a roofline of every
// kernel: each group's steps and their times, its FLOPs from the op it anchors, its bytes without the library's
// workspace.
#include <gtest/gtest.h>

#include "codegen/lower.h"
#include "common/matmul_graphs.h"
#include "ir/error.h"
#include "search/kernel_profile.h"

namespace kforge {
namespace {

TEST(KernelProfile, EveryGroupWithItsStepsTimesFlopsAndBytes) {
  GraphAnalysis analysis(graph_from_json(testing::matmul_graph("linear_bias_sigmoid")));  // x [45, 70], w [21, 70]
  const Plan plan = lower(analysis, Schedule{});
  std::vector<Stats> times(plan.kernels.size());
  for (size_t i = 0; i < times.size(); ++i) times[i].median_ms = 0.5 * double(i + 1);

  const nlohmann::json rows = kernel_profile(analysis, plan, times);
  ASSERT_GE(rows.size(), 2u) << rows.dump(1);  // the product, and the sigmoid cuBLASLt has no epilogue for
  double total = 0;
  size_t steps = 0;
  for (const auto& r : rows) {
    total += r["ms"].get<double>();
    steps += r["steps"].size();
    if (r["op"] == "matmul") {
      EXPECT_DOUBLE_EQ(r["flops"].get<double>(), 2.0 * 45 * 70 * 21);
      // x, w and the product at least; the workspace (scratch the library may leave untouched) left out.
      EXPECT_GE(r["bytes"].get<int64_t>(), 4 * (45 * 70 + 21 * 70 + 45 * 21));
      EXPECT_LT(r["bytes"].get<int64_t>(), 4 * (45 * 70 + 21 * 70 + 45 * 21 + 21) + 4096);
    } else {
      EXPECT_EQ(r["flops"].get<double>(), 0.0) << r.dump();  // elementwise arithmetic is not counted
      EXPECT_GT(r["bytes"].get<int64_t>(), 0);
    }
  }
  EXPECT_EQ(steps, plan.kernels.size());
  double expected = 0;
  for (const Stats& t : times) expected += t.median_ms;
  EXPECT_DOUBLE_EQ(total, expected);
  EXPECT_EQ(rows[0]["steps"][0]["name"], plan.kernels[0].name);  // launch order
}

TEST(KernelProfile, WithoutTimesGivesBytesAndFlopsAndRefusesAMismatchedCount) {
  GraphAnalysis analysis(graph_from_json(testing::matmul_graph("linear_bias_sigmoid")));
  const Plan plan = lower(analysis, Schedule{});
  for (const auto& r : kernel_profile(analysis, plan, {})) EXPECT_EQ(r["ms"].get<double>(), 0.0);
  EXPECT_THROW(kernel_profile(analysis, plan, std::vector<Stats>(plan.kernels.size() + 1)), UserError);
}

}  // namespace
}  // namespace kforge
