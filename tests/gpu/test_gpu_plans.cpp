// Every sample graph, under several schedules, run on the GPU against the CPU interpreter (double
// precision) with the strict tier's tolerance. Skips with the reason when there is no GPU; CI runs the
// `cpu` label only, the device check runs this label.
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "common/device_tensors.h"
#include "common/random_inputs.h"
#include "common/representative_schedules.h"
#include "common/sample_graphs.h"
#include "ir/decompose.h"
#include "runtime/driver.h"
#include "runtime/executor.h"

namespace kforge {
namespace {

class GpuPlans : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  }
};

TEST_P(GpuPlans, MatchInterpreterUnderEverySchedule) {
  nlohmann::json graph_json;
  for (auto& s : testing::sample_graphs())
    if (s.name == GetParam()) graph_json = s.graph;
  Graph g = graph_from_json(graph_json);
  Graph prim = decompose(g);
  std::mt19937_64 rng(42);
  auto inputs = testing::random_values(g, g.inputs, rng);
  auto params = testing::random_values(g, g.params, rng);
  auto expected = interpret(prim, inputs, params);

  Compiler compiler({"sm_90", default_cache_dir(), {}});
  testing::DeviceTensors dev(inputs, params, expected);
  for (auto& s : testing::representative_schedules(g, true)) {
    LoadedPlan lp(lower(g, s), compiler);
    dev.poison_outputs();
    lp.run(dev.bindings, nullptr);
    KF_CU(driver().cuCtxSynchronize());
    for (size_t j = 0; j < expected.size(); ++j) {
      std::string bad = testing::mismatches(dev.output(j, expected[j].type.dtype), expected[j], 1e-4);
      if (!bad.empty()) {
        ADD_FAILURE() << GetParam() << " schedule " << to_json(s).dump() << " output " << j << ":\n" << bad;
        return;
      }
    }
  }
}

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (auto& s : testing::sample_graphs()) n.push_back(s.name);
  return n;
}

INSTANTIATE_TEST_SUITE_P(Samples, GpuPlans, ::testing::ValuesIn(names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kforge
