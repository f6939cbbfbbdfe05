// kforge's direct depthwise kernel (emit_conv_direct.cpp), run on the CPU: the generated CUDA text is compiled
// by the host C++ compiler under a few definitions that make it C++ (a CUDA thread is a std::thread, a block's
// __shared__ arrays are statics all of its threads see, __syncthreads is a std::barrier), one block walking every
// tile, and its result is compared with the reference interpreter's convolution for every tile shape of the
// schedule space. This checks the kernel's indexing, padding, strides, dilations, partial tiles and barriers
// without a GPU; the GPU tests (tests/gpu/test_gpu_library.cpp) run the same samples on the device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include "codegen/lower.h"
#include "common/conv_graphs.h"
#include "common/random_inputs.h"
#include "common/scratch_path.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

const char* kEmulation = R"(#include <barrier>
#include <cmath>
#include <thread>
#include <vector>
typedef long long i64;
struct KfDim { unsigned x = 0; };
static thread_local KfDim threadIdx;
static const KfDim blockIdx{0}, gridDim{1};
static std::barrier<>* kf_barrier;
#define __global__
#define __shared__ static
#define __launch_bounds__(n)
#define __restrict__
#define __syncthreads() kf_barrier->arrive_and_wait()
)";

// The kernel of `p` (one generated kernel reading x and w, writing y) built into a shared object with a
// launcher; returns its path, or "" with `why` set where no host compiler is found.
std::string build_on_cpu(const PlanKernel& k, const std::string& tag, std::string& why) {
  const std::string src = testing::scratch_path("direct_" + tag + ".cpp"), so = testing::scratch_path("direct_" + tag + ".so");
  const size_t at = k.source.find("extern \"C\" __global__");
  if (at == std::string::npos) {
    why = "no kernel entry in the source";
    return "";
  }
  std::ofstream(src) << kEmulation << k.source.substr(at) << "\nextern \"C\" void kf_launch(float** a, int block) {\n"
                     << "  std::barrier<> bar(block);\n  kf_barrier = &bar;\n  std::vector<std::thread> threads;\n"
                     << "  for (int i = 0; i < block; ++i) threads.emplace_back([a, i] { threadIdx.x = unsigned(i); "
                     << k.name << "(a[0], a[1], a[2]); });\n  for (auto& t : threads) t.join();\n}\n";
  const std::string cmd = "c++ -std=c++20 -O1 -shared -fPIC -pthread -Wno-unknown-pragmas -o " + so + " " + src + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    why = "the host compiler failed on " + src;
    return "";
  }
  return so;
}

TEST(ConvDirect, MatchesTheInterpreterOnTheCpuForEveryTileShape) {
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
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
      std::string why, tag = sample.name + "_" + std::to_string(ks.block) + "_" + std::to_string(ks.items);
      std::string so = build_on_cpu(p.kernels[0], tag, why);
      ASSERT_FALSE(so.empty()) << why;
      void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      ASSERT_NE(lib, nullptr) << dlerror();
      auto launch = reinterpret_cast<void (*)(float**, int)>(dlsym(lib, "kf_launch"));
      ASSERT_NE(launch, nullptr);
      std::vector<float> x(inputs[0].data.begin(), inputs[0].data.end()), w(params[0].data.begin(), params[0].data.end());
      std::vector<float> y(expected[0].data.size(), NAN);  // poisoned: an element never written shows
      float* args[] = {x.data(), w.data(), y.data()};
      launch(args, ks.block);
      dlclose(lib);
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

}  // namespace
}  // namespace kforge
