// Kernels whose values depend on the element's coordinates run on the CPU (common/cpu_kernel_runner.h): a
// triangle (torch.tril / triu), a concatenation and a padding in a pointwise kernel under every vector width, and feeding a row
// sum or softmax under the strategies the runner runs, against the interpreter.
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "common/cpu_kernel_runner.h"
#include "common/device_tensors.h"
#include "common/random_inputs.h"
#include "common/sample_graphs.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

// Runs the sample `name`'s single kernel on the CPU under each schedule of its last group that the runner runs
// (pointwise blocks of 128 at each vector width, a thread per row), against the interpreter; how many ran.
int schedules_matching_the_interpreter(const char* name, uint64_t seed, double tol = 1e-5) {
  Graph g = graph_from_json(testing::sample_graph(name));
  std::mt19937_64 rng(seed);
  auto inputs = testing::random_values(g, g.inputs, rng);
  std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
  GraphAnalysis analysis(g);
  const KernelGroup& grp = analysis.groups(true).back();
  int checked = 0;
  for (const KernelSchedule& ks : schedule_space(grp)) {
    const bool pointwise = grp.kind == GroupKind::pointwise && ks.block == 128 && ks.items == 1;
    const bool rows = grp.kind == GroupKind::row && ks.strategy == Strategy::thread && ks.vec == 1 && ks.items == 1 &&
                      ks.block == 64;
    if (!pointwise && !rows) continue;
    Schedule s;
    s.kernels[grp.key] = ks;
    std::vector<float> got = testing::run_plan_on_cpu(lower(analysis, s), inputs);
    EXPECT_EQ(got.size(), want[0].data.size()) << name;
    if (got.size() == want[0].data.size()) {
      EXPECT_EQ(testing::mismatches(got, want[0], tol), "") << name << " " << to_json(s).dump();
    }
    ++checked;
  }
  return checked;
}

TEST(TriangleKernels, MatchTheInterpreterOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  // tril at vec 1, 2 and 4, and the row sum
  EXPECT_EQ(schedules_matching_the_interpreter("tril", 5) + schedules_matching_the_interpreter("triu_row_sum", 5), 4);
}

// torch.cat: each part read at its own positions (a permuted part, and slices, through their strides), in a
// pointwise kernel under every vector width and feeding a softmax's rows, against the interpreter; and a slice read
// through reshapes that only move a dim of one (one kernel: the slice is not copied first).
TEST(CatKernels, MatchTheInterpreterOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  for (const char* name : {"cat_middle_relu", "cat_last_softmax", "slices_swapped_halves", "slice_squeezed"})
    EXPECT_GE(schedules_matching_the_interpreter(name, 7), 1) << name;
}

// F.pad in every mode (ir/pad.h): the input read at mirrored, clamped or wrapped positions through a view's strides,
// in three dims at once, or the fill, in a pointwise kernel under every vector width and feeding a softmax's rows.
TEST(PadKernels, MatchTheInterpreterOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  for (const char* name : {"pad_reflect_permuted_tanh", "pad_replicate_3d", "pad_circular_softmax", "pad_constant_squared"})
    EXPECT_GE(schedules_matching_the_interpreter(name, 11), 1) << name;
}

// A padding of elementwise arithmetic computes it at its source positions: the arithmetic is never written (one
// kernel for x * w, ReLU, the reflect padding and tanh; one tiled transpose for ReLU, a padding and the transpose),
// and arithmetic reading a reduction's result (rows centred on their mean) reads it at the mapped coordinates; all
// against the interpreter, every kernel run on the CPU.
TEST(PadKernels, ComputeTheArithmeticTheyPadAtItsSourcePositions) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  for (const auto& [name, kernels] : std::vector<std::pair<const char*, size_t>>{{"pad_of_arithmetic", 1}, {"pad_of_centred_rows", 2}, {"pad_transposed", 1}}) {
    Graph g = graph_from_json(testing::sample_graph(name));
    std::mt19937_64 rng(13);
    auto inputs = testing::random_values(g, g.inputs, rng);
    const Plan p = lower(g, {});
    ASSERT_EQ(p.kernels.size(), kernels) << name;
    testing::HostPlanBuffers h = testing::plan_buffers_on_cpu(p, inputs);
    for (const PlanKernel& k : p.kernels) {
      std::vector<float*> args;
      for (int b : k.args) args.push_back(h.data[size_t(b)].data());
      testing::run_on_cpu(k, args, k.grid);
    }
    EXPECT_EQ(testing::mismatches(testing::output_values(p, h), interpret(primitive_graph(g), inputs, {})[0], 1e-5), "") << name;
  }
}

// A literal tensor (a concatenation of one constant an element) stores none of its parts: at most the concatenation's
// kernel and its reader's, where every part once took a kernel of its own.
TEST(CatKernels, ALiteralTensorStoresNoneOfItsElements) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  const Plan p = lower(graph_from_json(testing::sample_graph("literal_tensor_add")), {});
  EXPECT_LE(p.kernels.size(), 2u);
  Graph g = graph_from_json(testing::sample_graph("literal_tensor_add"));
  std::mt19937_64 rng(3);
  auto inputs = testing::random_values(g, g.inputs, rng);
  const std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
  testing::HostPlanBuffers h = testing::plan_buffers_on_cpu(p, inputs);
  for (const PlanKernel& k : p.kernels) {
    std::vector<float*> args;
    for (int b : k.args) args.push_back(h.data[size_t(b)].data());
    testing::run_on_cpu(k, args, k.grid);
  }
  EXPECT_EQ(testing::mismatches(testing::output_values(p, h), want[0], 1e-6), "");
}

// Half-precision inputs and outputs (16-bit patterns, vector loads and stores of 2-8 of them) against the
// interpreter, which rounds each stored value once: one unit in the last place of bf16 is 2^-8 relative.
TEST(HalfPrecisionKernels, MatchTheInterpreterOnTheCpuAtEveryVectorWidth) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  EXPECT_EQ(schedules_matching_the_interpreter("half_gelu_scale", 11, 1e-3), 3);  // vec 1, 2 and 4
  EXPECT_EQ(schedules_matching_the_interpreter("half_and_f32_add", 11, 1e-6), 3);
  EXPECT_GE(schedules_matching_the_interpreter("bf16_softmax_rows", 11, 8e-3), 1);
}

// Two outputs of one pointwise kernel (partition.cpp: a stored value computed from another joins its kernel), each
// stored whole under every vector width, against the interpreter.
TEST(PointwiseKernels, OneKernelWritesBothOutputsAtEveryVectorWidth) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  Graph g = graph_from_json(testing::sample_graph("residual_and_activation"));
  std::mt19937_64 rng(13);
  auto inputs = testing::random_values(g, g.inputs, rng);
  const std::vector<HostTensor> want = interpret(primitive_graph(g), inputs, {});
  GraphAnalysis analysis(g);
  ASSERT_EQ(analysis.groups(true).size(), 1u) << "one kernel for both outputs";
  const KernelGroup& grp = analysis.groups(true)[0];
  EXPECT_EQ(grp.elem_outputs.size(), 2u);
  for (int vec : {1, 2, 4}) {
    Schedule s;
    s.kernels[grp.key] = {.strategy = Strategy::flat, .block = 128, .vec = vec};
    const Plan p = lower(analysis, s);
    ASSERT_EQ(p.kernels.size(), 1u);
    testing::HostPlanBuffers h = testing::plan_buffers_on_cpu(p, inputs);
    std::vector<float*> args;
    for (int b : p.kernels[0].args) args.push_back(h.data[size_t(b)].data());
    testing::run_on_cpu(p.kernels[0], args);
    for (const PlanBuffer& b : p.buffers) {
      if (b.role != BufferRole::output) continue;
      const std::vector<float>& got = h.data[size_t(&b - &p.buffers[0])];
      EXPECT_EQ(testing::mismatches(got, want[size_t(b.index)], 1e-6), "") << "output " << b.index << " at vec " << vec;
    }
  }
}

// The interpreter's triangle is torch's: column - row against the diagonal, over the last two dims.
TEST(TriangleKernels, TheInterpreterKeepsTorchsTriangle) {
  Graph g = graph_from_json(testing::unary_graph("triangle", {2, 3, 4}, {{"upper", true}, {"diagonal", 1}}));
  HostTensor x{g.at(g.inputs[0]).type, std::vector<double>(24, 1.0)};
  std::vector<HostTensor> y = interpret(g, {x}, {});
  // Each 3 x 4 matrix keeps (r, c) with c - r >= 1.
  const std::vector<double> matrix = {0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1};
  for (size_t i = 0; i < 24; ++i) EXPECT_EQ(y[0].data[i], matrix[i % 12]) << i;
}

}  // namespace
}  // namespace kforge
