// The convolution family's generated kernels run on the CPU (common/cpu_kernel_runner.h): kforge's direct
// depthwise kernel against the reference interpreter for every tile shape of the schedule space (indexing,
// padding, strides, dilations, partial tiles, barriers), and the channels-last transposes around an NHWC cuDNN
// step against the permutation they stand for. The GPU tests (tests/gpu/test_gpu_library.cpp) run the same
// samples on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/lower.h"
#include "common/conv_graphs.h"
#include "common/cpu_kernel_runner.h"
#include "common/random_inputs.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

std::vector<float> as_floats(const HostTensor& t) { return std::vector<float>(t.data.begin(), t.data.end()); }

TEST(ConvDirect, MatchesTheInterpreterOnTheCpuForEveryTileShape) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  for (auto& sample : testing::conv_graphs()) {
    if (sample.name.find("depthwise") == std::string::npos) continue;
    nlohmann::json j = sample.graph;
    j["params"] = {j["params"][0]};  // the convolution alone: the direct kernel leaves the bias to the next kernel
    j["nodes"][0]["args"] = {"x", "w"};
    Graph g = graph_from_json(j);
    std::mt19937_64 rng(7);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    std::vector<HostTensor> expected = interpret(primitive_graph(g), inputs, params);
    KernelGroup grp = kernel_groups(g, true).at(0);
    for (auto& ks : schedule_space(grp)) {
      if (ks.strategy != Strategy::tile) continue;
      Schedule s;
      s.kernels[grp.key] = ks;
      Plan p = lower(g, s);
      ASSERT_EQ(p.kernels.size(), 1u);
      std::vector<float> x = as_floats(inputs[0]), w = as_floats(params[0]);
      std::vector<float> y(expected[0].data.size(), NAN);  // poisoned: an element never written shows
      testing::run_on_cpu(p.kernels[0], {x.data(), w.data(), y.data()});
      for (size_t i = 0; i < y.size(); ++i) {
        const double want = expected[0].data[i];
        ASSERT_LE(std::abs(double(y[i]) - want), 1e-4 * (1 + std::abs(want)))
            << sample.name << " " << to_json(ks).dump() << " element " << i << ": " << y[i] << " vs " << want;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * 6);
}

// x [n][c][s] -> [n][s][c] before the NHWC step, and the step's result [n][s][o] -> [n][o][s] after it: each a
// tiled transpose through shared memory, checked here on a conv whose extents are no multiples of the tile.
TEST(ConvLayout, TheChannelsLastTransposesPermuteOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  Graph g = graph_from_json(testing::conv_graph("conv2d_asymmetric"));  // x [2, 5, 11, 19]
  Schedule s;
  for (auto& grp : kernel_groups(g, true))
    if (grp.kind == GroupKind::conv) s.kernels[grp.key] = {.strategy = Strategy::library, .layout = Layout::nhwc};
  Plan p = lower(g, s);
  const PlanKernel* x_in = nullptr;
  for (auto& k : p.kernels)
    if (k.name.find("_x_nhwc") != std::string::npos) x_in = &k;
  ASSERT_NE(x_in, nullptr);
  const int64_t n = 2, c = 5, hw = 11 * 19;
  std::vector<float> x(size_t(n * c * hw)), out(x.size(), NAN);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  testing::run_on_cpu(*x_in, {x.data(), out.data()});
  for (int64_t a = 0; a < n; ++a)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t sp = 0; sp < hw; ++sp)
        ASSERT_EQ(out[size_t((a * hw + sp) * c + ch)], x[size_t((a * c + ch) * hw + sp)]) << a << " " << ch << " " << sp;
}

}  // namespace
}  // namespace kforge
