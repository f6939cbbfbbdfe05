// cuDNN without a GPU: libcudnn loads on demand with every entry point kforge uses, and cuDNN itself accepts
// the tensor, convolution and CONVOLUTION_FORWARD descriptors the runtime builds for every conv sample's step
// (the half of the attribute sequence that needs no handle; the rest runs in tests/gpu/test_gpu_library.cpp).
#include <gtest/gtest.h>

#include "codegen/lower.h"
#include "common/conv_graphs.h"
#include "common/plan_steps.h"
#include "ir/error.h"
#include "runtime/cudnn_api.h"
#include "runtime/cudnn_conv.h"

namespace kforge {
namespace {

class CudnnHost : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cudnn();
    } catch (const UserError& e) {
      GTEST_SKIP() << "cuDNN is not installed here: " << e.what();
    }
  }
};

TEST_F(CudnnHost, LoadsWithEveryEntryPoint) {
  EXPECT_GE(cudnn().cudnnGetVersion(), size_t(CUDNN_MAJOR) * 10000) << "libcudnn." << CUDNN_MAJOR << " or later";
  EXPECT_STREQ(cudnn().cudnnGetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
}

// Both layouts in fp32, and the 16-bit tensors (fp16, bf16; fp16x3's fp16 parts with an fp32 result, directly and
// through a virtual tensor and an identity pointwise op) of channels-last steps; each also with cuDNN's graph
// applying the epilogue (library_epilogue: pointwise operations after the convolution into the NCHW result),
// where the schedule is legal.
TEST_F(CudnnHost, AcceptsTheOperationOfEveryConvSampleInBothLayouts) {
  const std::pair<Layout, Precision> forms[] = {{Layout::nchw, Precision::fp32}, {Layout::nhwc, Precision::fp32},
                                                {Layout::nhwc, Precision::fp16}, {Layout::nhwc, Precision::bf16},
                                                {Layout::nhwc, Precision::fp16x3}};
  int epilogues = 0;
  for (auto& s : testing::conv_graphs()) {
    for (auto [layout, precision] : forms)
    for (bool library_epilogue : {false, true}) {
      Graph g = graph_from_json(s.graph);
      Schedule schedule;
      bool legal = true;
      for (auto& grp : kernel_groups(g, true))
        if (grp.kind == GroupKind::conv) {
          KernelSchedule ks{.strategy = Strategy::library, .precision = precision, .layout = layout, .library_epilogue = library_epilogue};
          legal = is_legal(grp, ks);
          schedule.kernels[grp.key] = ks;
        }
      if (!legal) continue;
      epilogues += library_epilogue;
      Plan p = lower(g, schedule);
      auto step = testing::steps(p, StepKind::cudnn);
      ASSERT_EQ(step.size(), 1u) << s.name;
      EXPECT_EQ(step[0]->library.contains("epilogue"), library_epilogue);
      EXPECT_NO_THROW(finalize_conv_operation(step[0]->library, step[0]->name))
          << s.name << " " << to_string(layout) << " " << to_string(precision) << " " << step[0]->library.dump();
    }
  }
  EXPECT_GE(epilogues, int(testing::conv_graphs().size())) << "fp16x3's scales in every sample's graph, at least";
}

TEST_F(CudnnHost, AStepWhoseGeometryDisagreesIsRefusedBeforeCudnnIsAsked) {
  Plan p = lower(graph_from_json(testing::conv_graph("conv2d")), {});
  nlohmann::json lib = testing::steps(p, StepKind::cudnn)[0]->library;
  lib["out"] = {13, 14};  // not what the geometry gives
  try {
    finalize_conv_operation(lib, "bad");
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cuDNN step 'bad': out [13,14] disagrees with the geometry [13, 13]"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge
