// Row kernels run on the CPU (common/cpu_kernel_runner.h): the strategies whose threads walk long stretches of a
// row alone (a thread per row; the tile's warps, each down every W-th element of 32 rows) must keep the strict
// tier where a row sums to nearly nothing (17_sum_middle_dim on the GPU: the tile plan ran at eager's speed
// but missed 1e-4 by summing 4093 floats in order; its running sum is now compensated), and softmax's online
// statistic (the max and the sum of exp in one walk) must match the interpreter, masked -inf elements included;
// a thread of several neighbouring columns (vector loads) must index each of them right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "codegen/lower.h"
#include "common/cpu_kernel_runner.h"
#include "common/random_inputs.h"
#include "common/sample_graphs.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

// y = x.sum(dim=1) over x [b, r, i]: r-long lines strided by i, i of them side by side.
Graph sum_over_middle(int64_t b, int64_t r, int64_t i) {
  return graph_from_json(testing::unary_graph("sum", {b, r, i}, {{"dims", {1}}, {"keepdim", false}}));
}

// The schedules of `g`'s single row group that the CPU runner can run: a thread per row or the tile (their
// combines need no warp shuffle), rows not cached in shared memory (no extern shared arrays); a tile's rows in
// registers included; no cluster (the runner runs one block at a time, a cluster's blocks wait for each other:
// the GPU tests run those).
std::vector<Schedule> cpu_runnable_schedules(const Graph& g) {
  KernelGroup grp = kernel_groups(g, true).at(0);
  std::vector<Schedule> out;
  for (auto& ks : schedule_space(grp)) {
    if (ks.strategy != Strategy::tile && ks.strategy != Strategy::thread) continue;
    if (cluster_blocks(ks) > 1) continue;
    if (ks.cache_row != RowCache::none && !(ks.strategy == Strategy::tile && ks.cache_row == RowCache::registers)) continue;
    Schedule s;
    s.kernels[grp.key] = ks;
    out.push_back(s);
  }
  return out;
}

TEST(RowSums, LongSerialWalksKeepTheStrictTierOnRowsThatCancel) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  const int64_t B = 2, R = 3001, I = 24, half = R / 2;
  Graph g = sum_over_middle(B, R, I);
  // Each column: values up to 100 and their negations, then one small element; the exact sum is that element,
  // while the running sums reach thousands (a plain float walk is off by ~1e-2).
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> big(-100.f, 100.f), small(-1.f, 1.f);
  std::vector<float> x(B * R * I);
  std::vector<double> want(B * I);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < I; ++c) {
      auto at = [&](int64_t r) -> float& { return x[(b * R + r) * I + c]; };
      for (int64_t r = 0; r < half; ++r) at(r) = big(rng), at(r + half) = -at(r);
      at(R - 1) = small(rng);
      double s = 0;
      for (int64_t r = 0; r < R; ++r) s += at(r);
      want[b * I + c] = s;
    }
  int checked = 0;
  for (const Schedule& s : cpu_runnable_schedules(g)) {
    Plan p = lower(g, s);
    ASSERT_EQ(p.kernels.size(), 1u);
    std::vector<float> y(B * I, NAN);
    testing::run_on_cpu(p.kernels[0], {x.data(), y.data()});
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_LE(std::abs(double(y[i]) - want[i]), 1e-4 * (1 + std::abs(want[i])))
          << to_json(s).dump() << " column " << i << ": " << y[i] << " vs " << want[i];
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// Infinities in a compensated walk: +inf stays +inf (a compensation of (inf - s) - inf would turn it into NaN),
// +inf and -inf make NaN, as torch.sum does.
TEST(RowSums, InfinitiesSurviveTheCompensatedWalk) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  Graph g = sum_over_middle(1, 300, 3);
  std::vector<float> x(900, 1.f);
  x[3 * 10 + 0] = INFINITY;                          // column 0: +inf
  x[3 * 20 + 1] = INFINITY, x[3 * 250 + 1] = -INFINITY;  // column 1: NaN
  int checked = 0;
  for (const Schedule& s : cpu_runnable_schedules(g)) {
    Plan p = lower(g, s);
    std::vector<float> y(3, 0.f);
    testing::run_on_cpu(p.kernels.at(0), {x.data(), y.data()});
    EXPECT_EQ(y[0], INFINITY) << to_json(s).dump();
    EXPECT_TRUE(std::isnan(y[1])) << to_json(s).dump();
    EXPECT_EQ(y[2], 300.f) << to_json(s).dump();
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// A thread of 2 or 4 neighbouring columns (thread strategy, vec > 1) reads them with one vector load per step
// and keeps one accumulator each: argmin over the middle dim, with ties (the first index wins) and a NaN (wins).
TEST(RowColumns, VectorThreadsMatchTheInterpreterOnArgminWithTies) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  const int64_t B = 2, R = 37, I = 640;  // 1280 columns: a thread of 2 or 4 of them loops (64-256 threads)
  Graph g = graph_from_json(testing::unary_graph("argmin", {B, R, I}, {{"dim", 1}, {"keepdim", false}}));
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> coarse(-3, 3);  // few distinct values: most columns have tied minima
  std::vector<HostTensor> inputs = {{TensorType{DType::f32, {B, R, I}}, {}}};
  for (int64_t i = 0; i < B * R * I; ++i) inputs[0].data.push_back(coarse(rng));
  inputs[0].data[(1 * R + 20) * I + 5] = NAN;
  inputs[0].data[(1 * R + 30) * I + 600] = NAN;  // a column the second pass of the grid-stride loop reaches
  std::vector<float> x(inputs[0].data.begin(), inputs[0].data.end());
  std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
  int vectors = 0;
  for (const Schedule& s : cpu_runnable_schedules(g)) {
    const KernelSchedule& ks = s.kernels.begin()->second;
    if (ks.vec == 1) continue;
    std::vector<int64_t> y(B * I, -7);
    testing::run_on_cpu(lower(g, s).kernels.at(0), {x.data(), reinterpret_cast<float*>(y.data())});
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(double(y[i]), want[0].data[i]) << to_json(s).dump() << " column " << i;
    ++vectors;
  }
  EXPECT_GE(vectors, 4);  // vec 2 and 4, several blocks and unrolls
}

TEST(RowOnlineSoftmax, MatchesTheInterpreterWithRescalesAndMaskedElements) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0, register_tiles = 0;
  for (const char* name : {"softmax", "log_softmax"}) {
    Graph g = graph_from_json(testing::sample_graph(name));
    std::mt19937_64 rng(17);
    auto inputs = testing::random_values(g, g.inputs, rng);
    // Wide values (the running max jumps often, each jump rescales the sum) and masked elements: -inf at every
    // 7th position, as a masked softmax's fill leaves them.
    for (size_t i = 0; i < inputs[0].data.size(); ++i) inputs[0].data[i] = i % 7 == 3 ? -INFINITY : inputs[0].data[i] * 12.0;
    inputs[0].data[40] = INFINITY;  // a +inf makes its row NaN (inf - inf), whichever thread meets it
    inputs[0].data[inputs[0].data.size() - 2] = -1e30;  // and a row's first max far below the rest
    std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
    ASSERT_TRUE(has_online_stat(kernel_groups(g, true).at(0))) << name;
    for (const Schedule& s : cpu_runnable_schedules(g)) {
      std::vector<float> got = testing::run_plan_on_cpu(lower(g, s), inputs);
      ASSERT_EQ(got.size(), want[0].data.size());
      for (size_t i = 0; i < got.size(); ++i) {
        const double w = want[0].data[i];
        if (std::isnan(w)) {
          ASSERT_TRUE(std::isnan(got[i])) << name << " " << to_json(s).dump() << " element " << i << ": " << got[i];
          continue;
        }
        if (std::isinf(w)) {
          ASSERT_EQ(double(got[i]), w) << name << " " << to_json(s).dump() << " element " << i;
          continue;
        }
        ASSERT_LE(std::abs(double(got[i]) - w), 1e-5 * (1 + std::abs(w))) << name << " " << to_json(s).dump() << " element " << i << ": " << got[i] << " vs " << w;
      }
      ++checked;
      for (auto& [key, ks] : s.kernels) register_tiles += ks.cache_row == RowCache::registers;
    }
  }
  EXPECT_GE(checked, 3);
  EXPECT_GE(register_tiles, 2);  // log_softmax's rows across the innermost dim, held in a tile's registers
}

// Half-precision columns under a thread of 2 or 4 of them: one 4- or 8-byte load serves their 16-bit patterns,
// lane j the j-th (low bits first), against the interpreter within one unit in the last place of f16 and bf16.
TEST(RowColumns, VectorThreadsReadHalfPrecisionPatternsLaneByLane) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  for (const char* dtype : {"f16", "bf16"}) {
    Graph g = graph_from_json(nlohmann::json::parse(std::string(R"({"inputs": [{"name": "x", "shape": [2, 37, 96], "dtype": ")") +
      dtype + R"("}], "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
                {"name": "s", "op": "sum", "args": ["xf"], "attrs": {"dims": [1], "keepdim": false}},
                {"name": "y", "op": "cast", "args": ["s"], "attrs": {"dtype": ")" + dtype + R"("}}], "outputs": ["y"]})"));
    std::mt19937_64 rng(31);
    auto inputs = testing::random_values(g, g.inputs, rng);
    std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
    int vectors = 0;
    for (const Schedule& s : cpu_runnable_schedules(g)) {
      if (s.kernels.begin()->second.vec == 1) continue;
      Plan p = lower(g, s);
      ASSERT_NE(p.kernels.at(0).source.find("kf_h"), std::string::npos) << p.kernels.at(0).source;
      std::vector<float> got = testing::run_plan_on_cpu(p, inputs);
      ASSERT_EQ(got.size(), want[0].data.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_LE(std::abs(double(got[i]) - want[0].data[i]), 8e-3 * (1 + std::abs(want[0].data[i])))
            << dtype << " " << to_json(s).dump() << " column " << i;
      ++vectors;
    }
    EXPECT_GE(vectors, 2) << dtype;
  }
}

// Half-precision rows (ir/types.h: bf16 stored, read through a cast): a log-softmax across a non-innermost dim under
// every schedule the runner runs, the tile's register rows holding the 16-bit patterns in float slots, against the
// interpreter within one unit in the last place of bf16 (2^-8 relative).
TEST(RowHalfPrecision, CachedHalfRowsMatchTheInterpreter) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  Graph g = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [3, 40, 33], "dtype": "bf16"}],
    "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
              {"name": "s", "op": "log_softmax", "args": ["xf"], "attrs": {"dim": 1}},
              {"name": "y", "op": "cast", "args": ["s"], "attrs": {"dtype": "bf16"}}], "outputs": ["y"]})"));
  std::mt19937_64 rng(23);
  auto inputs = testing::random_values(g, g.inputs, rng);
  std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
  int checked = 0, register_tiles = 0;
  for (const Schedule& s : cpu_runnable_schedules(g)) {
    std::vector<float> got = testing::run_plan_on_cpu(lower(g, s), inputs);
    ASSERT_EQ(got.size(), want[0].data.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::abs(double(got[i]) - want[0].data[i]), 8e-3 * (1 + std::abs(want[0].data[i]))) << to_json(s).dump() << " element " << i;
    ++checked;
    for (auto& [key, ks] : s.kernels) register_tiles += ks.cache_row == RowCache::registers;
  }
  EXPECT_GE(checked, 2);
  EXPECT_GE(register_tiles, 1);
}

// A product with one output column (ir/decompose.cpp's matrix_vector) is one row kernel: the product's
// multiply-adds as the row's elementwise work and sum, a Linear layer's bias and ReLU in the same kernel; it
// matches the product as torch.matmul defines it (summed here in double), under each schedule the CPU runner can run.
TEST(RowMatrixVector, ProductsWithOneOutputColumnAreOneRowKernel) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  for (const char* name : {"matrix_vector", "linear_one_output"}) {
    Graph g = graph_from_json(testing::sample_graph(name));
    const Graph prim = primitive_graph(g);
    EXPECT_TRUE(std::none_of(prim.nodes.begin(), prim.nodes.end(), [](const Node& n) { return n.op == "matmul"; })) << name;
    const std::vector<KernelGroup> groups = kernel_groups(g, true);
    ASSERT_EQ(groups.size(), 1u) << name;
    EXPECT_EQ(groups[0].kind, GroupKind::row) << name;
    std::mt19937_64 rng(23);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    // y[i] = sum_k a[i, k] v[k] (+ bias, ReLU): a the graph's first input, v the vector or the weight's row.
    const bool linear = !params.empty();
    const HostTensor &a = inputs[0], &v = linear ? params[0] : inputs[1];
    const int64_t k = a.type.shape.back(), rows = numel(a.type.shape) / k;
    std::vector<double> want;
    for (int64_t i = 0; i < rows; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) sum += double(a.data[size_t(i * k + j)]) * v.data[size_t(j)];
      want.push_back(linear ? std::max(0.0, sum + params[1].data[0]) : sum);
    }
    for (const Schedule& s : cpu_runnable_schedules(g)) {
      const std::vector<float> got = testing::run_plan_on_cpu(lower(g, s), inputs, params);
      ASSERT_EQ(got.size(), want.size()) << name;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_LE(std::abs(double(got[i]) - want[i]), 1e-5 * (1 + std::abs(want[i]))) << name << " " << to_json(s).dump() << " element " << i;
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

}  // namespace
}  // namespace kforge
