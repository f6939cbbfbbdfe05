// The channels-last form on the GPU (codegen/channels_last.h): every convolution chain of its tests, its
// convolutions in each precision (cuDNN's NHWC steps reading the graph's channels-last tensors, the copies around
// them converting or splitting), the tiled transposes, channels-last pools and two-stage statistics, against the
// CPU interpreter of the graph; run directly and replayed from a CUDA graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>

#include "codegen/analysis.h"
#include "codegen/lower.h"
#include "common/channels_last_graphs.h"
#include "common/device_tensors.h"
#include "common/random_inputs.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "runtime/driver.h"
#include "runtime/executor.h"

namespace kforge {
namespace {

// Every graph of the form's tests (and a chain whose statistics run in two stages), its analysis, the interpreter's
// outputs on random values and those values on the GPU, handed to `check`.
template <typename Check>
void for_each_graph(uint64_t seed, Check check) {
  auto graphs = testing::channels_last_graphs::all();
  graphs.push_back({"chain_two_stage_statistics", testing::channels_last_graphs::chain({4, 5, 48, 48})});
  for (const auto& [name, j] : graphs) {
    GraphAnalysis a(graph_from_json(j));
    const Graph& g = a.primitive();
    std::mt19937_64 rng(seed);
    const auto inputs = testing::random_values(g, g.inputs, rng);
    const auto params = testing::random_values(g, g.params, rng);
    const auto expected = interpret(g, inputs, params);
    testing::DeviceTensors dev(inputs, params, expected);
    check(name, a, dev, expected[0]);
  }
}

// `s` loaded, or nullptr where cuDNN's runtime-fusion engines refuse a convolution with its epilogue in its graph
// (they take it for some types and geometries only: such a plan is refused with the reason, which the search
// records, as tests/gpu/test_gpu_library.cpp's).
std::unique_ptr<LoadedPlan> load(const GraphAnalysis& a, const Schedule& s, Compiler& compiler, bool library_epilogue,
                                 const std::string& name) {
  try {
    return std::make_unique<LoadedPlan>(lower(a, s), compiler);
  } catch (const UserError& e) {
    if (!library_epilogue) throw;
    EXPECT_NE(std::string(e.what()).find("engine configurations cuDNN offers"), std::string::npos) << e.what();
    std::printf("refused: %s %s\n", name.c_str(), to_json(s).dump().c_str());
    return nullptr;
  }
}

TEST(GpuChannelsLast, EveryPrecisionMatchesTheInterpreter) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  testing::GpuSession gpu;
  int checked = 0, epilogues_loaded = 0, refused = 0;
  for_each_graph(9, [&](const std::string& name, const GraphAnalysis& a, testing::DeviceTensors& dev, const HostTensor& expected) {
    for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::fp16x3})
      for (bool library_epilogue : {false, true}) {
        const Schedule s = testing::channels_last_graphs::calls_in(a, precision, library_epilogue);
        if (library_epilogue && s.kernels.empty()) continue;
        auto loaded = load(a, s, gpu.compiler, library_epilogue, name);
        if (!loaded) {
          ++refused;
          continue;
        }
        // Two convolutions and norms between: TF32 and fp16 at the relaxed tier's order, fp16x3 near fp32's.
        const double tol = precision == Precision::fp32 ? 2e-4 : precision == Precision::fp16x3 ? 1e-3 : 3e-2;
        ASSERT_EQ(testing::run_and_replay(*loaded, dev, gpu.stream, expected, tol), "")
            << name << " " << to_string(precision) << (library_epilogue ? " epilogue in cuDNN" : "");
        ++checked;
        epilogues_loaded += library_epilogue;
      }
  });
  EXPECT_GE(checked, 30);
  EXPECT_GT(epilogues_loaded, 0) << "no convolution loaded with its epilogue in cuDNN (" << refused << " refused)";
}

// The fp16 form (codegen/half_activations.h): the convolutions read and write the graph's fp16 tensors with no copies,
// their epilogues in place on the fp16 result or in cuDNN's graph.
TEST(GpuChannelsLast, TheFp16FormMatchesTheInterpreter) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  testing::GpuSession gpu;
  int checked = 0;
  for_each_graph(13, [&](const std::string& name, const GraphAnalysis& a, testing::DeviceTensors& dev, const HostTensor& expected) {
    for (bool library_epilogue : {false, true}) {
      Schedule s;
      s.channels_last = s.half_activations = true;
      for (const KernelGroup& grp : a.groups(s)) {
        if (grp.kind != GroupKind::conv) continue;
        KernelSchedule ks = default_schedule(grp);
        ks.library_epilogue = library_epilogue;
        if (is_legal(grp, ks)) s.kernels[grp.key] = ks;
      }
      auto loaded = load(a, s, gpu.compiler, library_epilogue, name);
      if (!loaded) continue;
      // fp16's roundings carried through chains without a norm: of the output's RMS.
      const double tol = 2e-2 * std::max(1.0, testing::rms(expected));
      ASSERT_EQ(testing::run_and_replay(*loaded, dev, gpu.stream, expected, tol), "")
          << name << (library_epilogue ? " epilogue in cuDNN" : "");
      ++checked;
    }
  });
  EXPECT_GE(checked, 6);
}

}  // namespace
}  // namespace kforge
