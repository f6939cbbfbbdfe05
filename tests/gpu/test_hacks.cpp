// The reward-hack catalogue against the environment: every adversarial plan is rejected with its named
// reason and the honest one passes (evaluate() with five hidden sets, as the search runs it).
#include <gtest/gtest.h>

#include <random>

#include "common/hack_plans.h"
#include "common/random_inputs.h"
#include "env/evaluator.h"
#include "ir/decompose.h"
#include "runtime/driver.h"

namespace kforge {
namespace {

class Hacks : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  }
};

TEST_P(Hacks, AreCaughtWithTheirReason) {
  testing::HackPlan hack;
  for (auto& h : testing::hack_plans())
    if (h.name == GetParam()) hack = h;
  Graph g = graph_from_json(testing::hack_task_graph());
  std::mt19937_64 rng(7);
  std::vector<DeviceBuffer> keep;
  std::vector<std::vector<CUdeviceptr>> sets, refs;
  auto upload = [&](const HostTensor& t) {
    std::string bytes = testing::to_bytes(t);
    keep.emplace_back(bytes.size());
    keep.back().upload(bytes.data(), bytes.size());
    return keep.back().get();
  };
  for (int s = 0; s < 5; ++s) {
    auto in = testing::random_values(g, g.inputs, rng);
    auto out = interpret(decompose(g), in, {});
    sets.push_back({upload(in[0])});
    refs.push_back({upload(out[0])});
  }
  DeviceTask task(g, sets, refs, {});
  Compiler compiler({"sm_90", "", {}});
  Verifier verifier(compiler);
  TaskSpec spec{"hack", g, 1.0, 1.0};
  CUstream stream;  // a stream of its own: graph capture is not allowed on the legacy default stream
  KF_CU(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  EvalResult r = evaluate(spec, task, hack.plan, compiler, verifier, {}, stream);
  driver().cuStreamDestroy(stream);
  if (hack.expect == "strict") {
    EXPECT_TRUE(r.strict) << r.log;
  } else if (hack.expect == "relaxed") {
    EXPECT_FALSE(r.strict) << r.log;
    EXPECT_TRUE(r.relaxed) << r.log;
  } else {
    EXPECT_FALSE(r.relaxed) << "accepted: " << r.log;
    EXPECT_EQ(r.reward.reward, -1);
    EXPECT_NE(r.log.find(hack.expect), std::string::npos) << r.log;
  }
}

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (auto& h : testing::hack_plans()) n.push_back(h.name);
  return n;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, Hacks, ::testing::ValuesIn(names()), [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kforge
