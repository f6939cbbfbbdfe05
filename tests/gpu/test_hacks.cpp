// The reward-hack catalogue against the environment: every adversarial plan is rejected with its named
// reason and the honest one passes (evaluate() with five hidden sets, as the search runs it).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "common/scratch_path.h"
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

// The hack task (y = relu(x)) on the device: five hidden sets with references from the CPU interpreter,
// a verifier, and a stream of its own (graph capture is not allowed on the legacy default stream).
struct HackTask {
  Graph g = graph_from_json(testing::hack_task_graph());
  TaskSpec spec{"hack", g, 1.0, 1.0};
  std::vector<DeviceBuffer> keep;
  std::unique_ptr<DeviceTask> task;
  Compiler compiler{{"sm_90", "", {}}};
  Verifier verifier{compiler};
  CUstream stream = nullptr;

  explicit HackTask(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<CUdeviceptr>> sets, refs;
    for (int s = 0; s < 5; ++s) {
      auto in = testing::random_values(g, g.inputs, rng);
      auto out = interpret(decompose(g), in, {});
      sets.push_back({upload(in[0])});
      refs.push_back({upload(out[0])});
    }
    task = std::make_unique<DeviceTask>(g, sets, refs, std::vector<CUdeviceptr>{});
    KF_CU(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  }
  ~HackTask() { driver().cuStreamDestroy(stream); }
  CUdeviceptr upload(const HostTensor& t) {
    std::string bytes = testing::to_bytes(t);
    keep.emplace_back(bytes.size());
    keep.back().upload(bytes.data(), bytes.size());
    return keep.back().get();
  }
};

TEST_P(Hacks, AreCaughtWithTheirReason) {
  testing::HackPlan hack;
  for (auto& h : testing::hack_plans())
    if (h.name == GetParam()) hack = h;
  HackTask t(7);
  EvalResult r = evaluate(t.spec, *t.task, hack.plan, t.compiler, t.verifier, {}, t.stream);
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

// The check after timing exchanges the inputs of two sets and must undo it on every path: a persistent worker
// evaluates the next candidate against the same sets and references.
TEST(Hacks, LeaveTheTaskAsTheyFoundIt) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  std::map<std::string, testing::HackPlan> plans;
  for (auto& h : testing::hack_plans()) plans[h.name] = h;
  HackTask t(7);
  for (const char* name : {"caches_by_input_address", "wrong_after_checking", "honest"}) {
    EvalResult r = evaluate(t.spec, *t.task, plans.at(name).plan, t.compiler, t.verifier, {}, t.stream);
    EXPECT_EQ(r.strict, std::string(name) == "honest") << name << ": " << r.log;
  }
}

// A time under the roofline floor is measured again before it is paid. No honest plan beats the floor, so
// the test lowers the ceiling: at a claimed copy bandwidth of 1 MB/s every real time looks impossible.
TEST(Roofline, ATimeUnderTheFloorIsReMeasuredAndNotPaid) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  testing::HackPlan honest;
  for (auto& h : testing::hack_plans())
    if (h.expect == "strict") honest = h;
  ASSERT_FALSE(honest.name.empty());
  HackTask t(7);
  EvalOptions o;
  o.copy_gbs = 1e-3;
  EvalResult r = evaluate(t.spec, *t.task, honest.plan, t.compiler, t.verifier, o, t.stream);
  EXPECT_TRUE(r.strict) << r.log;
  EXPECT_TRUE(r.reward.suspect);
  EXPECT_EQ(r.reward.reward, 0);
  EXPECT_NE(r.log.find("re-measured on set 4"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("not paid"), std::string::npos) << r.log;
  // At the real bandwidth nothing is re-measured.
  EvalResult plain = evaluate(t.spec, *t.task, honest.plan, t.compiler, t.verifier, {}, t.stream);
  EXPECT_EQ(plain.log.find("re-measured"), std::string::npos) << plain.log;
  EXPECT_GT(plain.reward.reward, 0);
}

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (auto& h : testing::hack_plans()) n.push_back(h.name);
  return n;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, Hacks, ::testing::ValuesIn(names()), [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// Raw CUDA candidates through the same environment: an honest one passes; one that does its work on a
// stream of its own (so the timer on the given stream sees nothing) is rejected, whichever check fires first.
const char* kRawHonest = R"CU(
#include <cuda_runtime.h>
__global__ void relu(const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 4096) y[i] = fmaxf(x[i], 0.f); }
extern "C" int kforge_forward(const void* const* in, const void* const* p, void* const* out, cudaStream_t s) {
  relu<<<16, 256, 0, s>>>((const float*)in[0], (float*)out[0]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)CU";
const char* kRawOtherStream = R"CU(
#include <cuda_runtime.h>
__global__ void slow_relu(const float* x, float* y) {
  for (int k = 0; k < 200; ++k) __nanosleep(10000);  // ~2 ms the caller's events never see
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 4096) y[i] = fmaxf(x[i], 0.f);
}
extern "C" int kforge_forward(const void* const* in, const void* const* p, void* const* out, cudaStream_t) {
  static cudaStream_t mine = nullptr;
  if (!mine) cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);
  slow_relu<<<16, 256, 0, mine>>>((const float*)in[0], (float*)out[0]);
  return 0;
}
)CU";

TEST(RawCandidates, HonestPassesOtherStreamIsRejected) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  HackTask t(9);
  RawCudaOptions build;
  build.cache_dir = testing::scratch_path("kforge-raw-gpu");
  EvalResult honest = evaluate_raw_cuda(t.spec, *t.task, kRawHonest, build, t.verifier, {}, t.stream);
  EXPECT_TRUE(honest.strict) << honest.log;
  EvalResult sneaky = evaluate_raw_cuda(t.spec, *t.task, kRawOtherStream, build, t.verifier, {}, t.stream);
  EXPECT_FALSE(sneaky.relaxed) << "accepted work outside the timed stream: " << sneaky.log;
}

}  // namespace
}  // namespace kforge
