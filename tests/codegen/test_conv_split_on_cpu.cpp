// A convolution in fp16x3 (codegen/emit_conv_split.cpp) on the CPU: the plan's generated kernels (the operands'
// largest magnitudes, the channels-last transposes writing their scaled fp16 parts, the transpose back undoing
// the scales) run through the CPU runner, and the cuDNN step between them is emulated from its library block as
// emit_conv.cpp documents it (channels-last x [n][*in][c], w [o][*kernel][c / groups], y [n][*out][o]; a
// transposed step the backward data of that geometry), in double on the fp16 elements. Against the
// interpreter: fp16x3 holds the strict tier's 1e-4 on every sample, forward and transposed, grouped, depthwise,
// 1-3 spatial dims, and on inputs far outside fp16's range or deep in its subnormals; one fp16 rounding does not
// (the check can fail). The GPU tests (tests/gpu/test_gpu_library.cpp) run the same samples through cuDNN.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <optional>
#include <random>

#include "codegen/lower.h"
#include "common/conv_graphs.h"
#include "common/cpu_kernel_runner.h"
#include "common/device_tensors.h"
#include "common/random_inputs.h"
#include "ir/conv.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/scalar_math.h"

namespace kforge {
namespace {

double element_at(const std::vector<float>& buffer, int64_t i, bool half) {
  if (!half) return double(buffer[size_t(i)]);
  return double(std::bit_cast<_Float16>(reinterpret_cast<const uint16_t*>(buffer.data())[i]));
}

// Row-major index of `pos` in `extents`; false when a coordinate lies outside (padding).
bool flat_index(const std::vector<int64_t>& pos, const Shape& extents, int64_t& at) {
  at = 0;
  for (size_t i = 0; i < pos.size(); ++i) {
    if (pos[i] < 0 || pos[i] >= extents[i]) return false;
    at = at * extents[i] + pos[i];
  }
  return true;
}

std::vector<int64_t> coords(int64_t flat, const Shape& extents) {
  std::vector<int64_t> c(extents.size());
  for (size_t i = extents.size(); i-- > 0;) {
    c[i] = flat % extents[i];
    flat /= extents[i];
  }
  return c;
}

// cuDNN's step: every (batch, output position, output channel, tap, channel of the group) pairs the input
// position out * stride - pad + tap * dilation with the output position; a forward step sums into y at the output
// position, a backward-data step (op conv_transpose) into y at the input position (its x is the forward's output).
void emulate_conv_step(const PlanKernel& step, const std::vector<PlanBuffer>& buffers, std::vector<std::vector<float>>& data) {
  const nlohmann::json& lib = step.library;
  const ConvDims d = conv_step_dims(lib, "emulated step");
  const bool transpose = lib.at("op") == "conv_transpose";
  const auto& X = data[size_t(step.args[0])];
  const auto& W = data[size_t(step.args[1])];
  const bool half = buffers[size_t(step.args[0])].dtype == DType::f16;
  const int64_t cg = d.c / d.groups, og = d.o / d.groups, in_n = numel(d.in), out_n = numel(d.out), taps = numel(d.kernel);
  std::vector<double> y(size_t(transpose ? d.n * in_n * d.c : d.n * out_n * d.o), 0.0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t op = 0; op < out_n; ++op) {
      const std::vector<int64_t> out = coords(op, d.out);
      for (int64_t t = 0; t < taps; ++t) {
        const std::vector<int64_t> tap = coords(t, d.kernel);
        std::vector<int64_t> in(out.size());
        for (size_t i = 0; i < in.size(); ++i) in[i] = out[i] * d.stride[i] - d.padding[i] + tap[i] * d.dilation[i];
        int64_t ip = 0;
        if (!flat_index(in, d.in, ip)) continue;
        for (int64_t o = 0; o < d.o; ++o)
          for (int64_t j = 0; j < cg; ++j) {
            const int64_t c = o / og * cg + j;
            const double w = element_at(W, (o * taps + t) * cg + j, half);
            if (transpose)
              y[size_t((n * in_n + ip) * d.c + c)] += element_at(X, (n * out_n + op) * d.o + o, half) * w;
            else
              y[size_t((n * out_n + op) * d.o + o)] += element_at(X, (n * in_n + ip) * d.c + c, half) * w;
          }
      }
    }
  auto& Y = data[size_t(step.args[2])];
  if (lib.contains("epilogue")) {
    // cuDNN's graph (schedule library_epilogue): y[n][*][ch] times the scale, plus bias[ch], through the activation.
    const nlohmann::json& e = lib.at("epilogue");
    size_t next = 4;
    const std::vector<float>* bias = e.value("bias", false) ? &data[size_t(step.args.at(next++))] : nullptr;
    const double scale = e.value("scale", false) ? double(data[size_t(step.args.at(next++))][0]) : 1.0;
    std::optional<Node> act;
    if (e.contains("activation")) act = activation_node(e.at("activation"), {});
    const int64_t channels = transpose ? d.c : d.o;
    for (size_t i = 0; i < y.size(); ++i) {
      const double v = y[i] * scale + (bias ? double((*bias)[size_t(int64_t(i) % channels)]) : 0.0);
      y[i] = act ? eval_unary(*act, v) : v;
    }
  }
  const bool half_result = buffers[size_t(step.args[2])].dtype == DType::f16;  // fp16's step; fp16x3 writes fp32
  for (size_t i = 0; i < y.size(); ++i) {
    if (half_result)
      reinterpret_cast<uint16_t*>(Y.data())[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(y[i]));
    else
      Y[i] = float(y[i]);
  }
}

std::vector<float> run_conv_plan(const Plan& p, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& params) {
  testing::HostPlanBuffers host = testing::plan_buffers_on_cpu(p, inputs, params);
  for (const PlanKernel& k : p.kernels) {
    if (k.kind == StepKind::cudnn) {
      emulate_conv_step(k, p.buffers, host.data);
      continue;
    }
    std::vector<float*> args;
    for (int b : k.args) args.push_back(host.data[size_t(b)].data());
    testing::run_on_cpu(k, args, k.grid);  // the whole grid: the absmax kernel's blocks each write a partial
  }
  return host.data.at(size_t(host.output));
}

TEST(ConvSplit, Fp16x3HoldsTheStrictTierWhereOneFp16RoundingDoesNot) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  for (auto& sample : testing::conv_graphs()) {
    Graph g = graph_from_json(sample.graph);
    std::string key;
    for (auto& grp : kernel_groups(g, true))
      if (grp.kind == GroupKind::conv) key = grp.key;
    for (double magnitude : {1.0, 1e5, 1e-6}) {
      if (magnitude != 1.0 && sample.name != "conv2d_grouped" && sample.name != "conv_transpose2d") continue;
      std::mt19937_64 rng(5);
      auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
      testing::scale_values(inputs, magnitude);
      testing::scale_values(params, magnitude);
      // A bias scales as the products do (it is added to them).
      if (g.params.size() > 1)
        for (auto& x : params[1].data) x = float(x * magnitude);
      const std::vector<HostTensor> expected = interpret(primitive_graph(g), inputs, params);
      for (Precision precision : {Precision::fp16x3, Precision::fp16}) {
        if (precision == Precision::fp16 && (magnitude != 1.0 || sample.name.find("depthwise") != std::string::npos)) continue;
        Schedule s;
        s.kernels[key] = {.strategy = Strategy::library, .precision = precision, .layout = Layout::nhwc};
        Plan p = lower(g, s);
        if (precision == Precision::fp16) {
          // One fp16 rounding of x and w (no scale): off by more than the strict tier allows, within the relaxed.
          const double worst = testing::worst_scaled_error(run_conv_plan(p, inputs, params), expected[0], 1.0);
          EXPECT_GT(worst, 1e-4) << sample.name << ": fp16 this close means the check is blind";
          EXPECT_LT(worst, 1e-2) << sample.name;
          EXPECT_TRUE(p.below_fp32());
          continue;
        }
        EXPECT_FALSE(p.below_fp32()) << "split precision is judged by the strict tier";
        const PlanKernel* step = nullptr;
        for (auto& k : p.kernels)
          if (k.kind == StepKind::cudnn) step = &k;
        ASSERT_NE(step, nullptr);
        EXPECT_NO_THROW(check_library_step(*step, p.buffers)) << sample.name;
        const double worst = testing::worst_scaled_error(run_conv_plan(p, inputs, params), expected[0], magnitude * magnitude);
        EXPECT_LT(worst, 1e-4) << sample.name << " x" << magnitude << ": split precision off by " << worst;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, int(testing::conv_graphs().size()) + 2 * 2);
}

// cuDNN's graph applying the epilogue (schedule library_epilogue) in fp16x3: the step undoes the parts' scales
// (epilogue.scale: the undo factor the x transpose writes), adds the bias and applies the activation; the transpose
// back only transposes. Emulated so, the plan holds the strict tier as the kernel epilogue's does (forward and
// transposed, with and without a bias, with a ReLU).
TEST(ConvSplit, ALibraryEpilogueUndoesTheScalesAndWritesTheResult) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  for (const char* name : {"conv2d_bias_relu", "conv2d_no_bias", "conv_transpose2d", "conv1d"}) {
    Graph g = graph_from_json(testing::conv_graph(name));
    KernelGroup grp = kernel_groups(g, true).at(0);
    Schedule s;
    s.kernels[grp.key] = {.strategy = Strategy::library, .precision = Precision::fp16x3, .layout = Layout::nhwc,
                          .library_epilogue = true};
    Plan p = lower(g, s);
    ASSERT_EQ(p.kernels.size(), 5u) << name << ": absmax, x parts, w parts, cuDNN, back";
    const PlanKernel& step = p.kernels[3];
    const bool bias = g.params.size() == 2;
    EXPECT_EQ(step.library.at("epilogue").at("bias"), bias) << name;
    EXPECT_EQ(step.library.at("epilogue").at("scale"), true) << name;
    EXPECT_EQ(step.library.at("epilogue").contains("activation"), std::string(name).find("relu") != std::string::npos) << name;
    ASSERT_EQ(step.args.size(), 6u - !bias) << name;
    EXPECT_EQ(step.args.back(), p.kernels[1].args.back()) << name << ": the undo factor the x transpose writes";
    EXPECT_EQ(p.kernels[4].args, (std::vector<int>{step.args[2], p.kernels[4].args.back()})) << name << ": only transposes";
    EXPECT_NO_THROW(check_library_step(step, p.buffers)) << name;
    std::mt19937_64 rng(9);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    const std::vector<HostTensor> expected = interpret(primitive_graph(g), inputs, params);
    const double worst = testing::worst_scaled_error(run_conv_plan(p, inputs, params), expected[0], 1.0);
    EXPECT_LT(worst, 1e-4) << name;
  }
}

// The step of a split convolution is a convolution of three times the reduction's channels in the same groups:
// a forward one's input channels, a transposed one's output channels (the forward's, which its sum runs over).
TEST(ConvSplit, TheStepTriplesTheChannelsItsSumRunsOver) {
  for (const char* name : {"conv2d_grouped", "conv_transpose2d_grouped_dilated"}) {
    Graph g = graph_from_json(testing::conv_graph(name));
    KernelGroup grp = kernel_groups(g, true).at(0);
    Schedule s;
    s.kernels[grp.key] = {.strategy = Strategy::library, .precision = Precision::fp16x3, .layout = Layout::nhwc};
    Plan p = lower(g, s);
    ASSERT_EQ(p.kernels.size(), 5u) << "absmax, x parts, w parts, cuDNN, back";
    const PlanKernel& step = p.kernels[3];
    ASSERT_EQ(step.kind, StepKind::cudnn);
    const nlohmann::json& lib = step.library;
    EXPECT_EQ(lib.at("precision"), "fp16x3");
    EXPECT_EQ(lib.at("layout"), "NHWC");
    const bool transpose = lib.at("op") == "conv_transpose";
    // conv2d_grouped: x [2, 8, 9, 10], 4 groups; the transposed one's forward has 8 output channels, 2 groups.
    EXPECT_EQ(lib.at(transpose ? "o" : "c"), 3 * 8) << name;
    EXPECT_EQ(lib.at("groups"), transpose ? 2 : 4) << name;
    EXPECT_EQ(p.buffers[size_t(step.args[0])].dtype, DType::f16);
    EXPECT_EQ(p.buffers[size_t(step.args[1])].dtype, DType::f16);
    EXPECT_EQ(p.buffers[size_t(step.args[2])].dtype, DType::f32) << "the parts' products summed in fp32, never rounded to fp16";
    // The transpose back reads the undo factor that the x transpose writes.
    const std::vector<int>& back = p.kernels[4].args;
    EXPECT_NE(std::find(back.begin(), back.end(), p.kernels[1].args.back()), back.end()) << name;
  }
  // NCHW has no transposes to make the parts: refused, as fp16 is.
  Graph g = graph_from_json(testing::conv_graph("conv2d"));
  KernelSchedule ks = {.strategy = Strategy::library, .precision = Precision::fp16x3, .layout = Layout::nchw};
  EXPECT_THROW(check_schedule(kernel_groups(g, true).at(0), ks), UserError);
}

}  // namespace
}  // namespace kforge
