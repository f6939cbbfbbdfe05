// Every sample graph, under several schedules, run on the GPU against the CPU interpreter (double
// precision) with the strict tier's tolerance. Skips with the reason when there is no GPU; CI runs the
// `cpu` label only, the device check runs this label.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/lower.h"
#include "common/random_inputs.h"
#include "common/representative_schedules.h"
#include "common/sample_graphs.h"
#include "env/verify.h"
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
  std::vector<DeviceBuffer> din, dpar, dout;
  Bindings b;
  for (auto& t : inputs) {
    std::string bytes = testing::to_bytes(t);
    din.emplace_back(bytes.size());
    din.back().upload(bytes.data(), bytes.size());
    b.inputs.push_back(din.back().get());
  }
  for (auto& t : params) {
    std::string bytes = testing::to_bytes(t);
    dpar.emplace_back(bytes.size());
    dpar.back().upload(bytes.data(), bytes.size());
    b.params.push_back(dpar.back().get());
  }
  for (auto& t : expected) {
    dout.emplace_back(size_t(numel(t.type.shape)) * dtype_size(t.type.dtype));
    b.outputs.push_back(dout.back().get());
  }
  for (auto& s : testing::representative_schedules(g, true)) {
    LoadedPlan lp(lower(g, s), compiler);
    for (auto& o : dout) Verifier::poison(o.get(), o.bytes(), nullptr);
    lp.run(b, nullptr);
    KF_CU(driver().cuCtxSynchronize());
    for (size_t j = 0; j < expected.size(); ++j) {
      std::string bytes(dout[j].bytes(), '\0');
      dout[j].download(bytes.data(), bytes.size());
      auto got = testing::from_bytes(bytes, expected[j].type.dtype);
      int shown = 0;
      for (size_t i = 0; i < got.size() && shown < 5; ++i) {
        double e = expected[j].data[i];
        if (!(std::fabs(got[i] - e) <= 1e-4 + 1e-4 * std::fabs(e))) {
          ADD_FAILURE() << GetParam() << " schedule " << to_json(s).dump() << " output " << j << " index " << i
                        << ": got " << got[i] << ", expected " << e;
          ++shown;
        }
      }
      if (shown) return;
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
