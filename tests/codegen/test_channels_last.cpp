// The channels-last form (codegen/channels_last.h): the same function as the graph on every sample, no transpose
// between neighbouring convolutions (a BatchNorm and activation between them computed channels-last), the
// convolutions' steps reading the graph's tensors as they are, and plans that compile in every precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <set>

#include "codegen/analysis.h"
#include "codegen/channels_last.h"
#include "codegen/lower.h"
#include "common/channels_last_graphs.h"
#include "common/cpu_kernel_runner.h"
#include "common/device_tensors.h"
#include "common/graph_json.h"
#include "common/half_graphs.h"
#include "common/plan_steps.h"
#include "common/random_inputs.h"
#include "ir/conv.h"
#include "ir/decompose.h"
#include "ir/half_operands.h"
#include "ir/interpreter.h"
#include "ir/ops.h"
#include "runtime/compiler.h"

namespace kforge {
namespace {

using json = nlohmann::json;
using namespace testing::channels_last_graphs;

// The nodes the outputs depend on (primitive graphs keep nodes a fold left unread).
std::vector<int> reachable(const Graph& g) {
  std::vector<bool> seen(g.nodes.size(), false);
  std::vector<int> todo(g.outputs.begin(), g.outputs.end()), out;
  while (!todo.empty()) {
    int id = todo.back();
    todo.pop_back();
    if (id < 0 || seen[size_t(id)]) continue;
    seen[size_t(id)] = true;
    for (int a : g.at(id).args) todo.push_back(a);
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i]) out.push_back(int(i));
  return out;
}

TEST(ChannelsLast, TheFormComputesWhatTheGraphComputes) {
  for (auto& [name, j] : all()) {
    GraphAnalysis a(graph_from_json(j));
    ASSERT_TRUE(a.has_channels_last_form()) << name;
    const Graph &plain = a.primitive(), &last = a.primitive(true);
    std::mt19937_64 rng(7);
    auto inputs = testing::random_values(plain, plain.inputs, rng);
    auto params = testing::random_values(plain, plain.params, rng);
    std::vector<HostTensor> want = interpret(plain, inputs, params), got = interpret(last, inputs, params);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(got[o].type, want[o].type) << name << " output " << o;
      for (size_t i = 0; i < want[o].data.size(); ++i)
        ASSERT_NEAR(got[o].data[i], want[o].data[i], 1e-9 * (1 + std::abs(want[o].data[i]))) << name << " output " << o << " at " << i;
    }
  }
}

// Statistics over many rows (4 x 48 x 48 per channel) run in two reductions that keep the channels innermost, the
// first over runs of rows short enough for tens of thousands of lanes (16 rows: 576 x 8 lanes), the variance as the
// mean square about the mean; the same values as the graph's.
TEST(ChannelsLast, TheStatisticsOfManyRowsRunInTwoStages) {
  GraphAnalysis a(graph_from_json(chain({4, 5, 48, 48})));
  const Graph &plain = a.primitive(), &g = a.primitive(true);
  int var = 0, stages = 0, partials = 0;
  for (int i : reachable(g)) {
    const Node& n = g.at(i);
    if (n.op != "reduce") continue;
    var += n.attr_s("kind") == "var";
    const Shape& in = g.at(n.args[0]).type.shape;
    EXPECT_EQ(n.attr_ints("dims").size(), 1u) << n.name;
    // Rows in runs of 16, the channels innermost; then the 576 partials.
    stages += in == Shape{576, 16, 8} ? 1 : 0;
    partials += in == Shape{576, 1, 8} ? 1 : 0;
  }
  EXPECT_EQ(var, 0);
  EXPECT_EQ(stages, 2) << "the sum (shared by the mean) and the sum of squares";
  EXPECT_EQ(partials, 2);
  std::mt19937_64 rng(11);
  auto inputs = testing::random_values(plain, plain.inputs, rng);
  auto params = testing::random_values(plain, plain.params, rng);
  std::vector<HostTensor> want = interpret(plain, inputs, params), got = interpret(g, inputs, params);
  for (size_t i = 0; i < want[0].data.size(); ++i)
    ASSERT_NEAR(got[0].data[i], want[0].data[i], 1e-9 * (1 + std::abs(want[0].data[i]))) << i;
}

// The statistics' two kernels on the CPU (the convolution's result given): the first stage's sums and sums of
// squares about the channel's first row in one kernel, the second's in one more with the variance's arithmetic;
// the sum and the variance of conv + bias per channel, against double sums.
TEST(ChannelsLast, TheStatisticsTwoKernelsComputeTheSumAndVarianceOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  GraphAnalysis a(graph_from_json(chain({4, 5, 48, 48})));
  Schedule s;
  s.channels_last = true;
  const Plan p = lower(a, s);
  std::vector<const PlanKernel*> stages;
  for (const PlanKernel& k : p.kernels)
    if (k.name.find("_columns_") != std::string::npos) stages.push_back(&k);
  ASSERT_EQ(stages.size(), 2u) << "one kernel a stage, both sums in each";
  auto named = [&](const std::string& name) {
    for (size_t i = 0; i < p.buffers.size(); ++i)
      if (p.buffers[i].name == name) return int(i);
    return -1;
  };
  const int conv = named("c1.conv1"), bias = named("b1");
  ASSERT_GE(conv, 0);
  ASSERT_GE(bias, 0);
  const int64_t rows = 4 * 48 * 48, channels = 8;
  std::vector<std::vector<float>> data(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) data[i].assign(size_t(std::max<int64_t>(numel(p.buffers[i].shape), 1)), NAN);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(5.f, 2.f);  // a mean well away from 0: the shift's case
  for (float& v : data[size_t(conv)]) v = normal(rng);
  for (float& v : data[size_t(bias)]) v = normal(rng);
  for (const PlanKernel* k : stages) {
    std::vector<float*> args;
    for (int b : k->args) args.push_back(data[size_t(b)].data());
    testing::run_on_cpu(*k, args, k->grid);
  }
  std::vector<double> sum(channels, 0), squares(channels, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) sum[size_t(c)] += double(data[size_t(conv)][size_t(r * channels + c)]) + data[size_t(bias)][size_t(c)];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      const double d = double(data[size_t(conv)][size_t(r * channels + c)]) + data[size_t(bias)][size_t(c)] - sum[size_t(c)] / double(rows);
      squares[size_t(c)] += d * d;
    }
  int sums = 0, variances = 0;
  for (int b : stages[1]->args) {
    if (p.buffers[size_t(b)].shape != Shape{1, 1, channels}) continue;
    const std::vector<float>& got = data[size_t(b)];
    bool is_sum = true, is_var = true;
    for (int64_t c = 0; c < channels; ++c) {
      is_sum = is_sum && std::abs(got[size_t(c)] - sum[size_t(c)]) <= 1e-5 * std::abs(sum[size_t(c)]);
      is_var = is_var && std::abs(got[size_t(c)] - squares[size_t(c)] / double(rows)) <= 1e-5 * squares[size_t(c)] / double(rows);
    }
    sums += is_sum;
    variances += is_var;
  }
  EXPECT_EQ(sums, 1);
  EXPECT_EQ(variances, 1);
}

TEST(ChannelsLast, NeighbouringConvolutionsMeetWithoutATranspose) {
  GraphAnalysis a(graph_from_json(chain()));
  const Graph& g = a.primitive(true);
  std::vector<int> convs;
  for (int i : reachable(g))
    if (g.at(i).op == "conv") convs.push_back(i);
  ASSERT_EQ(convs.size(), 2u);
  for (int c : convs) EXPECT_TRUE(is_channels_last(g.at(c).attrs));
  // The second convolution reads the ReLU, computed channels-last from the BatchNorm's channels-last arithmetic.
  const Node& input = g.at(g.at(convs[1]).args[0]);
  EXPECT_EQ(input.op, "relu");
  EXPECT_EQ(input.type.shape, (Shape{2, 9, 11, 8}));
  // Permutes: x in, each weight, and the result back; the statistics' per-channel values are views.
  int whole = 0;
  for (int i : reachable(g))
    if (g.at(i).op == "permute" && numel(g.at(i).type.shape) > 8) ++whole;
  EXPECT_EQ(whole, 4) << "x, w1, w2 and the result";

  // Lowered in fp32: the steps read and write the graph's buffers, no transpose steps around them.
  Schedule s;
  s.channels_last = true;
  Plan p = lower(a, s);
  auto steps = testing::steps(p, StepKind::cudnn);
  ASSERT_EQ(steps.size(), 2u);
  for (const PlanKernel* k : steps) EXPECT_EQ(k->library.at("layout"), "NHWC");
  for (const PlanKernel& k : p.kernels) {
    EXPECT_EQ(k.name.find("_x_nhwc"), std::string::npos) << k.name;
    EXPECT_EQ(k.name.find("_y_nchw"), std::string::npos) << k.name;
  }
  // x, both weights and the result change layout in tiled transposes of their own (coalesced on both sides).
  std::vector<const PlanKernel*> tiled;
  for (const PlanKernel& k : p.kernels)
    if (k.source.find("as a tiled transpose") != std::string::npos) tiled.push_back(&k);
  ASSERT_EQ(tiled.size(), 4u);
  if (testing::host_compiler_available()) {  // x [2, 5, 9, 11] -> [2, 9, 11, 5]
    const PlanKernel& in = *tiled.front();
    ASSERT_EQ(p.buffers.at(in.args[0]).name, "x");
    std::vector<float> x(2 * 5 * 99), out(x.size(), NAN);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
    testing::run_on_cpu(in, {x.data(), out.data()}, 3);
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 5; ++c)
        for (int s = 0; s < 99; ++s) ASSERT_EQ(out[size_t((n * 99 + s) * 5 + c)], x[size_t((n * 5 + c) * 99 + s)]);
  }
  // The default form transposes around both steps.
  int transposes = 0;
  Schedule nhwc;
  for (const KernelGroup& grp : a.groups(true))
    if (grp.kind == GroupKind::conv) nhwc.kernels[grp.key] = {.strategy = Strategy::library, .layout = Layout::nhwc};
  for (const PlanKernel& k : lower(a, nhwc).kernels) transposes += k.name.find("_nhwc") != std::string::npos || k.name.find("_nchw") != std::string::npos;
  EXPECT_EQ(transposes, 6);
}

// The branches' activations and their concatenation are computed channels-last: the next convolution reads the
// concatenation as it is, and x is transposed once for both branches.
TEST(ChannelsLast, AConcatenationOfChannelsLastPartsIsOne) {
  GraphAnalysis a(graph_from_json(branches()));
  const Graph& g = a.primitive(true);
  int cats = 0, whole_permutes = 0;
  for (int i : reachable(g)) {
    const Node& n = g.at(i);
    if (n.op == "cat") {
      ++cats;
      EXPECT_EQ(n.attr_i("dim"), 3);
      EXPECT_EQ(n.type.shape, (Shape{2, 8, 7, 8}));
    }
    if (n.op == "permute" && n.attrs.value("materialize", false)) ++whole_permutes;
    if (n.op == "conv" && n.name == "c") EXPECT_EQ(g.at(n.args[0]).op, "cat");
  }
  EXPECT_EQ(cats, 1);
  // x once, the weights wb and wc, the result; the 1x1 weight wa [3, 4, 1, 1] is the same memory channels-last (a
  // reshape).
  EXPECT_EQ(whole_permutes, 4);
}

// A padding between convolutions pads the channels-last value as it is (its counts moved with the dims): no
// transpose back before it, and each padding is one kernel that writes the next convolution's input.
TEST(ChannelsLast, APaddingBetweenConvolutionsPadsTheChannelsLastValue) {
  GraphAnalysis a(graph_from_json(padded()));
  const Graph& g = a.primitive(true);
  int pads = 0;
  for (int i : reachable(g)) {
    const Node& n = g.at(i);
    if (n.op != "pad" || n.name == "y") continue;
    ++pads;
    EXPECT_NE(g.at(n.args[0]).op, "permute") << n.name << " pads a transposed value";
    const std::vector<int64_t> pads_nchw = n.name == "p1" ? std::vector<int64_t>{0, 0, 1, 2, 1, 1, 0, 0}
                                                          : std::vector<int64_t>{0, 0, 1, 1, 2, 1, 0, 0};
    EXPECT_EQ(n.attr_ints("pads"), pads_nchw) << n.name;
  }
  EXPECT_EQ(pads, 2);
  Schedule s;
  s.channels_last = true;
  // Lowered: the one transpose back is the last convolution's result (the graph pads and returns it channels
  // first); p1 and p2 are a kernel each.
  int p1 = 0, p2 = 0;
  for (const PlanKernel& k : lower(a, s).kernels) {
    if (k.name.find("channels_first") != std::string::npos) EXPECT_NE(k.name.find("_c3_"), std::string::npos) << k.name;
    p1 += k.name.find("_p1") != std::string::npos;
    p2 += k.name.find("_p2") != std::string::npos;
  }
  EXPECT_EQ(p1, 1);
  EXPECT_EQ(p2, 1);
}

// A pool of a channels-last value pools it as it is: its kernel walks [N, *spatial, C], neighbouring threads on
// neighbouring channels, and matches the interpreter on the CPU.
TEST(ChannelsLast, PoolsRunOnChannelsLastValues) {
  GraphAnalysis a(graph_from_json(pooled()));
  const Graph& g = a.primitive(true);
  int pools = 0;
  for (int i : reachable(g))
    if (g.at(i).op == "pool") {
      ++pools;
      EXPECT_TRUE(is_channels_last(g.at(i).attrs)) << g.at(i).name;
    }
  EXPECT_EQ(pools, 2);
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  for (const KernelGroup& grp : a.groups(true, true)) {
    if (grp.kind != GroupKind::pool) continue;
    const Node& pool = g.at(grp.anchor);
    // The pool alone over random channels-last input: one kernel, against the interpreter.
    Graph alone;
    Node x{.name = "x", .op = "input", .type = g.at(pool.args[0]).type};
    alone.inputs = {alone.add(x)};
    Node p = pool;
    p.args = {0};
    alone.outputs = {alone.add(p)};
    std::mt19937_64 rng(5);
    auto inputs = testing::random_values(alone, alone.inputs, rng);
    std::vector<HostTensor> want = interpret(alone, inputs, {});
    std::vector<float> got = testing::run_plan_on_cpu(lower(alone, {}), inputs);
    EXPECT_EQ(testing::mismatches(got, want[0], 1e-5), "") << pool.name;
  }
}

TEST(ChannelsLast, DepthwiseAndTransposedConvolutionsStayAsTheyAre) {
  GraphAnalysis a(graph_from_json(readers_of_every_kind()));
  const Graph& g = a.primitive(true);
  int last = 0, plain = 0;
  for (int i : reachable(g))
    if (is_conv_op(g.at(i).op)) ++(is_channels_last(g.at(i).attrs) ? last : plain);
  EXPECT_EQ(last, 2) << "c1 and the 3-D c3";
  EXPECT_EQ(plain, 2) << "the depthwise d and the transposed t";
  // Nothing to change: the same graph.
  json depthwise = {{"inputs", {testing::value("x", {1, 4, 6, 6})}}, {"params", {testing::value("w", {4, 1, 3, 3})}},
                    {"nodes", {testing::node("y", "conv", {"x", "w"}, {{"groups", 4}})}}, {"outputs", {"y"}}};
  GraphAnalysis d(graph_from_json(depthwise));
  EXPECT_FALSE(d.has_channels_last_form());
  EXPECT_EQ(&d.primitive(true), &d.primitive());
}

TEST(ChannelsLast, PlansCompileInEveryPrecisionAndTheLayoutIsFixed) {
  Compiler c({"sm_90", "", {}});
  std::set<std::string> compiled;
  for (auto& [name, j] : all()) {
    GraphAnalysis a(graph_from_json(j));
    for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp16x3})
      for (bool library_epilogue : {false, true}) {
        const Schedule s = calls_in(a, precision, library_epilogue);
        for (auto [key, ks] : s.kernels) {
          const KernelGroup& grp = *std::find_if(a.groups(true, true).begin(), a.groups(true, true).end(),
                                                 [&](const KernelGroup& g) { return g.key == key; });
          ks.layout = Layout::nchw;
          EXPECT_FALSE(is_legal(grp, ks)) << "a channels-last convolution's tensors are nhwc";
          EXPECT_EQ(default_schedule(grp).layout, Layout::nhwc);
        }
        Plan p = lower(a, s);
        for (const PlanKernel& k : p.kernels)
          if (k.kind == StepKind::nvrtc && compiled.insert(k.source).second) {  // each distinct kernel once
            CompileResult r = c.compile(k.source, k.name);
            ASSERT_TRUE(r.ok) << name << " " << to_string(precision) << "\n" << r.log << "\n" << k.source;
          }
        for (const PlanKernel* k : testing::steps(p, StepKind::cudnn)) EXPECT_NO_THROW(check_library_step(*k, p.buffers)) << name;
        EXPECT_EQ(Plan::from_json(p.to_json()).schedule, s) << "channels_last round-trips through JSON";
      }
  }
}

uint16_t to_f16(float v) { return std::bit_cast<uint16_t>(static_cast<_Float16>(v)); }

// The fp16 form (codegen/half_activations.h): every channels-last convolution reads fp16 operands stored by their
// producers (a norm's kernel, a weight's transposing rounding) and writes an fp16 result, with no copies around its
// step; the function is the graph's within fp16's rounding, and its plans compile and round-trip.
TEST(ChannelsLast, InTheFp16FormConvolutionsReadAndWriteTheGraphsFp16Tensors) {
  Compiler c({"sm_90", "", {}});
  for (auto& [name, j] : all()) {
    GraphAnalysis a(graph_from_json(j));
    const Graph &plain = a.primitive(), &half = a.primitive(true, false, true);
    int convs = 0;
    for (int i : reachable(half)) {
      const Node& n = half.at(i);
      if (n.op != "conv" || !is_channels_last(n.attrs)) continue;
      ++convs;
      EXPECT_EQ(n.type.dtype, DType::f16) << name << " " << n.name;
      for (int k : {0, 1}) EXPECT_EQ(half.at(n.args[size_t(k)]).type.dtype, DType::f32) << "read through its cast";
    }
    EXPECT_GT(convs, 0) << name;
    std::mt19937_64 rng(7);
    auto inputs = testing::random_values(plain, plain.inputs, rng);
    auto params = testing::random_values(plain, plain.params, rng);
    std::vector<HostTensor> want = interpret(plain, inputs, params), got = interpret(half, inputs, params);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t o = 0; o < want.size(); ++o) {  // fp16's roundings, carried through chains without a norm: of the RMS
      const double rms = testing::rms(want[o]);
      EXPECT_EQ(testing::mismatches(got[o].data, want[o], 1e-2 * std::max(1.0, rms)), "") << name << " output " << o << ", RMS " << rms;
    }
    Schedule s;
    s.channels_last = s.half_activations = true;
    Plan p = lower(a, s);
    int steps = 0;
    for (const PlanKernel* k : testing::steps(p, StepKind::cudnn)) {
      EXPECT_NO_THROW(check_library_step(*k, p.buffers)) << name;
      if (k->library.at("precision") != "fp16") continue;
      ++steps;
      for (int arg : {0, 1, 2}) {  // the graph's own fp16 tensors, not the step's copies
        const PlanBuffer& b = p.buffers.at(size_t(k->args[size_t(arg)]));
        EXPECT_EQ(b.dtype, DType::f16) << name << " " << k->name << " " << b.name;
        EXPECT_EQ(b.name.find("_nhwc"), std::string::npos) << name << " " << k->name << " " << b.name;
      }
    }
    EXPECT_EQ(steps, convs) << name;
    for (const PlanKernel& k : p.kernels) {
      EXPECT_EQ(k.name.find("_x_nhwc"), std::string::npos) << name << " " << k.name;
      if (k.kind != StepKind::nvrtc) continue;
      CompileResult r = c.compile(k.source, k.name);
      ASSERT_TRUE(r.ok) << name << "\n" << r.log << "\n" << k.source;
    }
    EXPECT_EQ(Plan::from_json(p.to_json()).schedule, s) << "half_activations round-trips through JSON";
  }
}

// A half-precision task's convolutions of its own 16-bit tensors chain channels-last too: its input and weights
// change layout in 16 bits (tiled transposes), the library reads them and writes its result as stored (no copies
// around the steps), and the form computes exactly what the graph computes.
TEST(ChannelsLast, AHalfPrecisionTasksConvolutionsChainOnTheir16BitValues) {
  Compiler c({"sm_90", "", {}});
  for (const std::string dtype : {"f16", "bf16"}) {
    const auto graphs = testing::half_library_graphs(dtype);
    const auto it = std::find_if(graphs.begin(), graphs.end(), [](const auto& s) { return s.name == "conv_scale_conv"; });
    ASSERT_NE(it, graphs.end());
    GraphAnalysis a(graph_from_json(it->graph));
    ASSERT_TRUE(a.has_channels_last_form()) << dtype;
    const Graph &plain = a.primitive(), &last = a.primitive(true);
    int convs = 0;
    for (int i : reachable(last))
      if (last.at(i).op == "conv") {
        ++convs;
        EXPECT_TRUE(is_channels_last(last.at(i).attrs));
        EXPECT_TRUE(half_operands(last, i)) << dtype << " " << last.at(i).name << ": reads its 16-bit operands as stored";
      }
    EXPECT_EQ(convs, 2);
    std::mt19937_64 rng(5);
    auto inputs = testing::random_values(plain, plain.inputs, rng), params = testing::random_values(plain, plain.params, rng);
    std::vector<HostTensor> want = interpret(plain, inputs, params), got = interpret(last, inputs, params);
    for (size_t i = 0; i < want[0].data.size(); ++i) ASSERT_EQ(got[0].data[i], want[0].data[i]) << dtype << " at " << i;
    Schedule s;
    s.channels_last = true;
    const Plan p = lower(a, s);
    const auto steps = testing::steps(p, StepKind::cudnn);
    ASSERT_EQ(steps.size(), 2u);
    for (const PlanKernel* k : steps) {
      try {
        check_library_step(*k, p.buffers);
      } catch (const std::exception& e) {
        ADD_FAILURE() << dtype << ": " << e.what();
      }
      for (int arg : {0, 1, 2}) EXPECT_EQ(p.buffers.at(size_t(k->args[size_t(arg)])).name.find("_nhwc"), std::string::npos) << k->name;
    }
    for (const PlanKernel& k : p.kernels)
      if (k.kind == StepKind::nvrtc) {
        CompileResult r = c.compile(k.source, k.name);
        ASSERT_TRUE(r.ok) << dtype << "\n" << r.log << "\n" << k.source;
      }
  }
}

// After a BatchNorm and ReLU, a max pool that only the next convolution's fp16 rounding reads pools the ReLU's fp16
// rounding, stored by the norm's kernel: no f32 value between them.
TEST(ChannelsLast, InTheFp16FormAMaxPoolReadsItsInputInFp16) {
  GraphAnalysis a(graph_from_json(normed_pooled()));
  const Graph& half = a.primitive(true, false, true);
  int pools = 0;
  for (int i : reachable(half)) {
    const Node& n = half.at(i);
    if (n.op != "pool") continue;
    ++pools;
    const Node& read = half.at(n.args[0]);
    ASSERT_EQ(read.op, "cast") << n.name;
    EXPECT_EQ(half.at(read.args[0]).type.dtype, DType::f16);
    EXPECT_EQ(half.at(half.at(read.args[0]).args[0]).op, "relu");
  }
  EXPECT_EQ(pools, 1);
  Schedule s;
  s.channels_last = s.half_activations = true;
  const Plan p = lower(a, s);
  for (const PlanKernel& k : p.kernels)
    if (k.name.find("pool") != std::string::npos) {
      EXPECT_EQ(p.buffers.at(size_t(k.args[0])).dtype, DType::f16) << k.name;
    }
}

// A 16-bit value changing layout (an fp16 convolution's channels-last result read channels first) is a tiled
// transpose too, both sides coalesced, the bits moved exactly.
TEST(ChannelsLast, AnFp16TransposeIsTiledOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  json x = testing::value("x", {2, 45, 37});
  x["dtype"] = "f16";
  json permuted = {{"inputs", {x}}, {"nodes", {testing::node("p", "permute", {"x"}, {{"dims", {0, 2, 1}}, {"materialize", true}})}},
                   {"outputs", {"p"}}};
  Plan p = lower(graph_from_json(permuted), {});
  ASSERT_EQ(p.kernels.size(), 1u);
  const PlanKernel& k = p.kernels[0];
  ASSERT_NE(k.source.find("as a tiled transpose"), std::string::npos) << k.source;
  std::vector<uint16_t> in(2 * 45 * 37), out(in.size(), 0xffff);
  for (size_t i = 0; i < in.size(); ++i) in[i] = to_f16(float(i) / 8.f - 100.f);
  testing::run_on_cpu(k, {reinterpret_cast<float*>(in.data()), reinterpret_cast<float*>(out.data())}, 4);
  for (int n = 0; n < 2; ++n)
    for (int a = 0; a < 45; ++a)
      for (int b = 0; b < 37; ++b) ASSERT_EQ(out[size_t((n * 37 + b) * 45 + a)], in[size_t((n * 45 + a) * 37 + b)]);
}

// Arithmetic only a layout change reads is computed in the transpose's kernel, at the source's coordinates, and a
// rounding of the transposed value is written beside it from the tile: one kernel, the input read once, for both
// directions (channels last, C spanning two dims, and back, B spanning two).
TEST(ChannelsLast, ATransposeComputesTheArithmeticItMovesAndRoundsBesideIt) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  struct Case {
    std::vector<int64_t> x, per_channel, dims;
  };
  for (const Case& c : {Case{{2, 7, 6, 5}, {7, 1, 1}, {0, 2, 3, 1}}, Case{{2, 6, 5, 7}, {7}, {0, 3, 1, 2}}}) {
    json g = {{"inputs", {testing::value("x", c.x)}},
              {"params", {testing::value("w", c.per_channel), testing::value("b", c.per_channel)}},
              {"nodes", {testing::node("m", "mul", {"x", "w"}), testing::node("a", "add", {"m", "b"}), testing::node("r", "relu", {"a"}),
                         testing::node("p", "permute", {"r"}, {{"dims", c.dims}, {"materialize", true}}),
                         testing::node("h", "cast", {"p"}, {{"dtype", "f16"}})}},
              {"outputs", {"p", "h"}}};
    const Graph graph = graph_from_json(g);
    Plan p = lower(graph, {});
    ASSERT_EQ(p.kernels.size(), 1u) << "the arithmetic, the transpose and the rounding in one kernel";
    const PlanKernel& k = p.kernels[0];
    ASSERT_NE(k.source.find("as a tiled transpose"), std::string::npos) << k.source;
    std::mt19937_64 rng(7);
    const std::vector<HostTensor> inputs = testing::random_values(graph, graph.inputs, rng),
                                  params = testing::random_values(graph, graph.params, rng);
    testing::HostPlanBuffers h = testing::plan_buffers_on_cpu(p, inputs, params);
    std::vector<float*> args;
    for (int b : k.args) args.push_back(h.data[size_t(b)].data());
    testing::run_on_cpu(k, args, k.grid);
    const std::vector<HostTensor> want = interpret(decompose(graph), inputs, params);
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      if (p.buffers[b].role != BufferRole::output) continue;
      const int o = p.buffers[b].index;
      std::vector<float> got(h.data[b].begin(), h.data[b].end());
      if (p.buffers[b].dtype == DType::f16) {
        const uint16_t* bits = reinterpret_cast<const uint16_t*>(h.data[b].data());
        got.assign(size_t(numel(p.buffers[b].shape)), 0.f);
        for (size_t i = 0; i < got.size(); ++i) got[i] = float(std::bit_cast<_Float16>(bits[i]));
      }
      EXPECT_EQ(testing::mismatches(got, want.at(size_t(o)), o == 0 ? 1e-6 : 1e-3), "") << "output " << o;
    }
  }
}

// A folded epilogue (bias, ReLU) of an fp16 result applied in place, 16 bits read and written, the bias of the
// channel (the innermost index).
TEST(ChannelsLast, TheEpilogueOfAnFp16ResultRunsInPlaceOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  json biased = {{"inputs", {testing::value("x", {2, 5, 9, 11})}},
                 {"params", {testing::value("w", {8, 5, 3, 3}), testing::value("b", {8}), testing::value("w2", {4, 8, 3, 3})}},
                 {"nodes", {testing::node("c", "conv", {"x", "w", "b"}, kPad1), testing::node("r", "relu", {"c"}),
                            testing::node("p", "max_pool", {"r"}, {{"nd", 2}, {"kernel", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}}}),
                            testing::node("c2", "conv", {"p", "w2"})}},
                 {"outputs", {"c2"}}};
  GraphAnalysis a(graph_from_json(biased));
  Schedule s;
  s.channels_last = s.half_activations = true;
  Plan p = lower(a, s);
  const PlanKernel* epilogue = nullptr;
  for (const PlanKernel& k : p.kernels)
    if (k.name.find("_epilogue") != std::string::npos) epilogue = &k;
  ASSERT_TRUE(epilogue) << "conv -> bias -> ReLU -> pool folds its bias and ReLU";
  ASSERT_EQ(epilogue->args.size(), 2u);
  ASSERT_EQ(p.buffers.at(size_t(epilogue->args[1])).dtype, DType::f16);
  const size_t yn = 2 * 9 * 11 * 8;
  std::vector<uint16_t> y16(yn);
  std::vector<float> bias(8);
  for (size_t i = 0; i < yn; ++i) y16[i] = to_f16(float(int(i % 97) - 48) / 4.f);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(i) - 3.f;
  testing::run_on_cpu(*epilogue, {bias.data(), reinterpret_cast<float*>(y16.data())}, 4);
  for (size_t i = 0; i < yn; ++i)
    ASSERT_EQ(y16[i], to_f16(std::max(0.f, float(int(i % 97) - 48) / 4.f + bias[i % 8]))) << i;
}

// In fp16 the copies into and out of a channels-last step convert in place of a transpose: x element for element
// to 16 bits, the result back to f32 with the bias of its channel (the innermost index).
TEST(ChannelsLast, TheCopiesAroundAHalfPrecisionStepConvertOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  json biased = {{"inputs", {testing::value("x", {2, 5, 9, 11})}},
                 {"params", {testing::value("w", {8, 5, 3, 3}), testing::value("b", {8})}},
                 {"nodes", {testing::node("c", "conv", {"x", "w", "b"}, kPad1)}}, {"outputs", {"c"}}};
  GraphAnalysis a(graph_from_json(biased));
  Schedule s;
  s.channels_last = true;
  for (const KernelGroup& grp : a.groups(true, true))
    if (grp.kind == GroupKind::conv) s.kernels[grp.key] = {.strategy = Strategy::library, .precision = Precision::fp16, .layout = Layout::nhwc};
  Plan p = lower(a, s);
  const PlanKernel *in = nullptr, *back = nullptr;
  for (const PlanKernel& k : p.kernels) {
    if (k.name.find("_x_nhwc") != std::string::npos && k.kind == StepKind::nvrtc) in = &k;
    if (k.name.find("_y_nchw") != std::string::npos) back = &k;
  }
  ASSERT_TRUE(in && back);
  const size_t xn = 2 * 9 * 11 * 5, yn = 2 * 9 * 11 * 8;
  std::vector<float> x(xn), y(yn, NAN), bias(8);
  std::vector<uint16_t> x16(xn, 0xffff), y16(yn);
  for (size_t i = 0; i < xn; ++i) x[i] = float(i) / 7.f - 20.f;
  testing::run_on_cpu(*in, {x.data(), reinterpret_cast<float*>(x16.data())}, 4);
  for (size_t i = 0; i < xn; ++i) ASSERT_EQ(x16[i], to_f16(x[i])) << i;
  for (size_t i = 0; i < yn; ++i) y16[i] = to_f16(float(i % 97) / 4.f);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 1000.f * float(i + 1);
  ASSERT_EQ(back->args.size(), 3u) << "the bias rides on the copy back";
  testing::run_on_cpu(*back, {reinterpret_cast<float*>(y16.data()), bias.data(), y.data()}, 4);
  for (size_t i = 0; i < yn; ++i) ASSERT_EQ(y[i], float(i % 97) / 4.f + bias[i % 8]) << i;
}

}  // namespace
}  // namespace kforge
