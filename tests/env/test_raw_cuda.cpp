#include <gtest/gtest.h>

#include <filesystem>

#include "common/scratch_path.h"
#include "ir/error.h"
#include "env/raw_cuda.h"

namespace kforge {
namespace {

const char* kRelu = R"CU(
#include <cuda_runtime.h>
__global__ void relu(const float* x, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" int kforge_forward(const void* const* inputs, const void* const* params, void* const* outputs, cudaStream_t stream) {
  relu<<<16, 256, 0, stream>>>((const float*)inputs[0], (float*)outputs[0], 4096);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)CU";

// A cache of the test's own: ctest runs these tests in parallel processes, and one of them empties its cache.
RawCudaOptions options() {
  RawCudaOptions o;
  o.cache_dir = testing::scratch_path("kforge-raw-cache-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return o;
}

TEST(RawCuda, AbiNamesEveryTensor) {
  Graph g = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [4096]}],
      "nodes": [{"name": "y", "op": "relu", "args": ["x"]}], "outputs": ["y"]})"));
  std::string h = abi_header(g);
  EXPECT_NE(h.find("inputs[0] x: f32 [4096]"), std::string::npos) << h;
  EXPECT_NE(h.find("outputs[0] y: f32 [4096]"), std::string::npos) << h;
  EXPECT_NE(h.find("extern \"C\" int kforge_forward("), std::string::npos);
}

TEST(RawCuda, BuildsLoadsAndCaches) {
  std::filesystem::remove_all(options().cache_dir);
  RawCudaBuild first = build_raw_cuda(kRelu, options());
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cache_hit);
  RawCudaBuild second = build_raw_cuda(kRelu, options());
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.so_path, first.so_path);
  EXPECT_NO_THROW(RawCudaCandidate c(first.so_path));  // dlopen needs no GPU
}

TEST(RawCuda, CompileErrorsAndMissingEntryPointsAreNamed) {
  RawCudaBuild bad = build_raw_cuda("__global__ void k() { no_such_call(); }", options());
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("no_such_call"), std::string::npos) << bad.log;
  RawCudaBuild no_entry = build_raw_cuda("__global__ void k() {}\nextern \"C\" int other() { return 0; }", options());
  ASSERT_TRUE(no_entry.ok) << no_entry.log;
  try {
    RawCudaCandidate c(no_entry.so_path);
    FAIL() << "loaded a candidate without kforge_forward";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("does not export extern \"C\" kforge_forward"), std::string::npos);
  }
}

}  // namespace
}  // namespace kforge
