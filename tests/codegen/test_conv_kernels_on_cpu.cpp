// The convolution family's generated kernels run on the CPU (common/cpu_kernel_runner.h): kforge's direct
// depthwise kernel against the reference interpreter for every tile shape of the schedule space (indexing,
// padding, strides, dilations, partial tiles, barriers), and the channels-last transposes around an NHWC cuDNN
// step against the permutation they stand for. The GPU tests (tests/gpu/test_gpu_library.cpp) run the same
// samples on the device.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "codegen/lower.h"
#include "common/conv_graphs.h"
#include "common/cpu_kernel_runner.h"
#include "common/random_inputs.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

TEST(ConvDirect, MatchesTheInterpreterOnTheCpuForEveryTileShape) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  for (auto& sample : testing::conv_graphs()) {
    if (sample.name.find("depthwise") == std::string::npos) continue;
    Graph g = graph_from_json(sample.graph);  // a bias, where the sample has one, is added by the kernel itself
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
      std::vector<float> y = testing::run_plan_on_cpu(p, inputs, params);
      ASSERT_EQ(y.size(), expected[0].data.size());
      for (size_t i = 0; i < y.size(); ++i) {
        const double want = expected[0].data[i];
        ASSERT_LE(std::abs(double(y[i]) - want), 1e-4 * (1 + std::abs(want)))
            << sample.name << " " << to_json(ks).dump() << " element " << i << ": " << y[i] << " vs " << want;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * 6);
}

// Around an NHWC step: x [n][c][s] -> [n][s][c] and w [o][c][taps] -> [o][taps][c] before it, its result
// [n][s][o] -> [n][o][s] after it, plus the bias (conv_epilogue.h); each a tiled transpose through shared memory
// (transpose_step of emit_conv.cpp), run here on a conv whose extents are no multiples of the 32 x 32 tile. In
// fp16 and bf16 the copies are 16-bit: the ways in round to nearest even, the way back widens.
uint16_t to_f16(float x) { return std::bit_cast<uint16_t>(static_cast<_Float16>(x)); }
uint16_t to_bf16(float x) {  // round to nearest even (the inputs here are finite)
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_half(uint16_t h, Precision p) {
  return p == Precision::fp16 ? float(std::bit_cast<_Float16>(h)) : std::bit_cast<float>(uint32_t(h) << 16);
}

TEST(ConvLayout, TheChannelsLastTransposesPermuteOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  Graph g = graph_from_json(testing::conv_graph("conv2d_asymmetric"));  // x [2, 5, 11, 19], w [7, 5, 3, 5]
  int ran = 0;
  for (Precision precision : {Precision::fp32, Precision::fp16, Precision::bf16}) {
    Schedule s;
    for (auto& grp : kernel_groups(g, true))
      if (grp.kind == GroupKind::conv)
        s.kernels[grp.key] = {.strategy = Strategy::library, .precision = precision, .layout = Layout::nhwc};
    Plan p = lower(g, s);
    const bool half = precision != Precision::fp32;
    // [a][b][c] -> [a][c][b] for each transpose, by the suffix of its kernel's name.
    struct Case {
      std::string suffix;
      int64_t a, b, c;
    };
    const Shape& ys = g.at(g.outputs.at(0)).type.shape;  // [2, 7, 11, 10]
    const int64_t y_extent = ys[2] * ys[3];
    for (const Case& cs : {Case{"_x_nhwc", 2, 5, 11 * 19}, Case{"_w_nhwc", 7, 5, 3 * 5}, Case{"_y_nchw", 2, y_extent, 7}}) {
      const PlanKernel* k = nullptr;
      for (auto& kk : p.kernels)
        if (kk.name.size() > cs.suffix.size() && kk.name.compare(kk.name.size() - cs.suffix.size(), cs.suffix.size(), cs.suffix) == 0)
          k = &kk;
      ASSERT_NE(k, nullptr) << cs.suffix;
      const bool back = cs.suffix == "_y_nchw";
      const size_t n = size_t(cs.a * cs.b * cs.c);
      // Inputs with fractions (i / 7): the 16-bit copies must round them, not truncate.
      std::vector<float> in(n), out(n, NAN), bias(size_t(cs.c));
      std::vector<uint16_t> in16(n), out16(n, 0xffff);
      for (size_t i = 0; i < n; ++i) {
        in[i] = float(i) / 7.f - 40.f;
        in16[i] = precision == Precision::fp16 ? to_f16(in[i]) : to_bf16(in[i]);
      }
      for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.5f + float(i) * 1000.f;
      const bool with_bias = k->args.size() == 3;
      EXPECT_EQ(with_bias, back) << "the conv's bias rides on the transpose back";
      float* src = half && back ? reinterpret_cast<float*>(in16.data()) : in.data();
      float* dst = half && !back ? reinterpret_cast<float*>(out16.data()) : out.data();
      testing::run_on_cpu(*k, with_bias ? std::vector<float*>{src, bias.data(), dst} : std::vector<float*>{src, dst});
      for (int64_t a = 0; a < cs.a; ++a)
        for (int64_t b = 0; b < cs.b; ++b)
          for (int64_t c = 0; c < cs.c; ++c) {
            const size_t from = size_t((a * cs.b + b) * cs.c + c), to = size_t((a * cs.c + c) * cs.b + b);
            const float extra = with_bias ? bias[size_t(c)] : 0.f;
            if (!half)
              ASSERT_EQ(out[to], in[from] + extra) << cs.suffix << " " << a << " " << b << " " << c;
            else if (back)
              ASSERT_EQ(out[to], from_half(in16[from], precision) + extra) << to_string(precision) << cs.suffix << " " << a << " " << b << " " << c;
            else
              ASSERT_EQ(out16[to], in16[from]) << to_string(precision) << cs.suffix << " " << a << " " << b << " " << c;
          }
      ++ran;
    }
    // The 16-bit copies are buffers of the step's precision's dtype (a half-precision task's own bf16 tensors are
    // read as they are, so the check takes bf16 buffers for bf16 steps).
    for (auto& k : p.kernels)
      if (k.kind == StepKind::cudnn) {
        EXPECT_EQ(k.library.at("precision"), to_string(precision));
        const DType copies = !half ? DType::f32 : precision == Precision::bf16 ? DType::bf16 : DType::f16;
        for (int i = 0; i < 3; ++i) EXPECT_EQ(p.buffers.at(k.args[i]).dtype, copies);
      }
    EXPECT_EQ(p.below_fp32(), half);
  }
  EXPECT_EQ(ran, 9);
}

// An NCHW library call whose bias nothing else reads: the pass after it adds bias[o] to y[n][o][s] in place.
TEST(ConvLayout, TheNchwBiasPassAddsOneValuePerChannelInPlace) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  Graph g = graph_from_json(testing::conv_graph("conv2d_asymmetric"));
  Plan p = lower(g, {});
  ASSERT_EQ(p.kernels.size(), 2u);
  ASSERT_EQ(p.kernels[0].kind, StepKind::cudnn);
  const PlanKernel& pass = p.kernels[1];
  ASSERT_EQ(pass.args, (std::vector<int>{pass.args[0], p.kernels[0].args[2]}));
  const Shape& ys = g.at(g.outputs.at(0)).type.shape;  // [2, 7, 11, 10]
  const int64_t spatial = ys[2] * ys[3];
  std::vector<float> y(static_cast<size_t>(numel(ys))), bias(static_cast<size_t>(ys[1]));
  for (size_t i = 0; i < y.size(); ++i) y[i] = float(i % 977);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 1000.f * float(i + 1);
  const std::vector<float> before = y;
  testing::run_on_cpu(pass, {bias.data(), y.data()});
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y[i], before[i] + bias[size_t(int64_t(i) / spatial % ys[1])]) << "element " << i;
}

}  // namespace
}  // namespace kforge
