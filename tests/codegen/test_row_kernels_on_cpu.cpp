// Row kernels run on the CPU (common/cpu_kernel_runner.h): the strategies whose threads walk long stretches of a
// row alone (a thread per row; the tile's warps, each down every W-th element of 32 rows) must keep the strict
// tier where a row sums to nearly nothing. Device run 7.2 (17_sum_middle_dim): the tile plan ran at eager's speed
// but missed 1e-4 by summing 4093 floats in order; its running sum is now compensated.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/lower.h"
#include "common/cpu_kernel_runner.h"

namespace kforge {
namespace {

TEST(RowSums, LongSerialWalksKeepTheStrictTierOnRowsThatCancel) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  const int64_t B = 2, R = 3001, I = 24, half = R / 2;
  nlohmann::json j = {{"inputs", {{{"name", "x"}, {"shape", {B, R, I}}}}},
                      {"nodes", {{{"name", "y"}, {"op", "sum"}, {"args", {"x"}}, {"attrs", {{"dims", {1}}, {"keepdim", false}}}}}},
                      {"outputs", {"y"}}};
  Graph g = graph_from_json(j);
  // Each column: values up to 100 and their negations, then one small element; the exact sum is that element,
  // while the running sums reach thousands (a plain float walk is off by ~1e-2).
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> big(-100.f, 100.f), small(-1.f, 1.f);
  std::vector<float> x(B * R * I);
  std::vector<double> want(B * I);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < I; ++c) {
      auto at = [&](int64_t r) -> float& { return x[(b * R + r) * I + c]; };
      for (int64_t r = 0; r < half; ++r) at(r) = big(rng), at(r + half) = -at(r);
      at(R - 1) = small(rng);
      double s = 0;
      for (int64_t r = 0; r < R; ++r) s += at(r);
      want[b * I + c] = s;
    }
  KernelGroup grp = kernel_groups(g, true).at(0);
  int checked = 0;
  for (auto& ks : schedule_space(grp)) {
    // The strategies whose combine needs no warp shuffle, which the CPU runner lacks.
    if ((ks.strategy != Strategy::tile && ks.strategy != Strategy::thread) || ks.cache_row != RowCache::none) continue;
    Schedule s;
    s.kernels[grp.key] = ks;
    Plan p = lower(g, s);
    ASSERT_EQ(p.kernels.size(), 1u);
    std::vector<float> y(B * I, NAN);
    testing::run_on_cpu(p.kernels[0], {x.data(), y.data()});
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_LE(std::abs(double(y[i]) - want[i]), 1e-4 * (1 + std::abs(want[i])))
          << to_json(ks).dump() << " column " << i << ": " << y[i] << " vs " << want[i];
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

}  // namespace
}  // namespace kforge
