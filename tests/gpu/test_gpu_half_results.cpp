// Half-precision tasks whose products and convolutions read and write 16-bit values (codegen/half_results.h), run
// on the GPU under their representative schedules against the CPU interpreter of the lowered graph (every op in
// double, rounded to 16 bits where the plan stores 16 bits, as PyTorch rounds its products' results), within
// KernelBench's half-precision tolerance: cuBLASLt's and cuDNN's 16-bit results, the kernels reading them through
// casts and storing 16-bit operands, a result written by the library itself. The weights are drawn at PyTorch's
// initial scale (1/sqrt(fan in)): at unit scale the intermediates are sums of 64-128 terms of magnitude ~8, whose
// last 16-bit place a different order of summation flips, and the next product multiplies that flip past any
// 16-bit tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/lower.h"
#include "common/device_tensors.h"
#include "common/half_graphs.h"
#include "common/random_inputs.h"
#include "common/representative_schedules.h"
#include "ir/decompose.h"
#include "runtime/driver.h"
#include "runtime/executor.h"

namespace kforge {
namespace {

TEST(GpuHalfResults, EveryGraphMatchesTheTaskInHalfPrecision) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  Compiler compiler({"sm_90", default_cache_dir(), {}});
  int checked = 0;
  for (const std::string dtype : {"f16", "bf16"}) {
    for (auto& sample : testing::half_library_graphs(dtype)) {
      Graph g = graph_from_json(sample.graph);
      std::mt19937_64 rng(42);
      auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
      for (HostTensor& p : params) {  // by a power of two: 16-bit values stay exact
        if (p.type.shape.size() < 2) continue;
        const double fan_in = double(numel(p.type.shape)) / double(p.type.shape[0]);
        const double scale = std::ldexp(1.0, -int(std::lround(std::log2(std::sqrt(fan_in)))));
        for (double& v : p.data) v *= scale;
      }
      auto expected = interpret(primitive_graph(g), inputs, params);
      testing::DeviceTensors dev(inputs, params, expected);
      for (const Schedule& s : testing::representative_schedules(g, true)) {
        LoadedPlan lp(lower(g, s), compiler);
        dev.poison_outputs();
        lp.run(dev.bindings, nullptr);
        KF_CU(driver().cuCtxSynchronize());
        const std::string bad = testing::mismatches(dev.output(0, expected[0].type.dtype), expected[0], 1e-2);
        ASSERT_TRUE(bad.empty()) << sample.name << " " << dtype << " schedule " << to_json(s).dump() << ":\n" << bad;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace kforge
