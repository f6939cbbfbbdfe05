// A matrix product in fp16x3 or fp16 (codegen/emit_matmul_split.cpp) on the CPU: the plan's two generated kernels
// (the operands' largest magnitudes, then their scaled 16-bit parts) run through the CPU runner, and the cuBLASLt
// step they feed is emulated from its JSON block exactly as emit_matmul.cpp documents it (operands read through
// transposed / ld / batch_stride, k the copies' reduction length, alpha and beta from the device buffer), in
// double. Against the interpreter: fp16x3 holds the strict tier's 1e-4 where one fp16 rounding does not, on
// inputs far outside fp16's range and deep inside its subnormals too (the scale). The GPU tests
// (tests/gpu/test_gpu_library.cpp) run the same samples through cuBLASLt itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <random>

#include "codegen/lower.h"
#include "common/cpu_kernel_runner.h"
#include "common/device_tensors.h"
#include "common/graph_json.h"
#include "common/matmul_graphs.h"
#include "common/random_inputs.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/matmul.h"

namespace kforge {
namespace {

double half_at(const std::vector<float>& buffer, int64_t i) {
  return double(std::bit_cast<_Float16>(reinterpret_cast<const uint16_t*>(buffer.data())[i]));
}

// An operand as the library reads it through its JSON block: element (row, col) of batch entry `b`, and its
// value (a 16-bit copy's, or an f32 buffer's). Read out of the block once: the emulation's inner loop runs
// millions of times.
struct OperandView {
  int64_t ld, stride, offset;
  bool transposed, half;
  explicit OperandView(const nlohmann::json& o)
      : ld(o.at("ld")), stride(o.at("batch_stride")), offset(o.value("offset", int64_t(0))),
        transposed(o.value("transposed", false)), half(o.value("dtype", "f32") == "f16") {}
  int64_t element(int64_t b, int64_t row, int64_t col) const {
    return offset + b * stride + (transposed ? col * ld + row : row * ld + col);
  }
  double at(const std::vector<float>& buffer, int64_t i) const { return half ? half_at(buffer, i) : double(buffer[size_t(i)]); }
};

double epilogue(Epilogue e, double v, double bias) {
  if (has_bias(e)) v += bias;
  if (e == Epilogue::relu || e == Epilogue::bias_relu) return std::max(v, 0.0);
  if (e == Epilogue::gelu || e == Epilogue::bias_gelu)  // cuBLASLt's GELU: the tanh form
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  return v;
}

// cuBLASLt's c = epilogue(alpha a b + beta c) on 16-bit operands, as `step`'s block describes it (double sums).
void emulate_library_step(const PlanKernel& step, std::vector<std::vector<float>>& data) {
  const nlohmann::json& lib = step.library;
  const int64_t m = lib.at("m"), n = lib.at("n"), k = lib.at("k"), batch = lib.at("batch");
  const Epilogue e = epilogue_from_string(lib.at("epilogue"));
  const auto& A = data[size_t(step.args[0])];
  const auto& B = data[size_t(step.args[1])];
  auto& C = data[size_t(step.args[2])];
  const bool copies = lib.at("a").value("dtype", "f32") == "f16";
  const float host_scale[3] = {1.f, 0.f, 1.f};
  // alpha, beta 0, beta 1 (a piece of a cut reduction adds to c)
  const float* scale = copies ? data[size_t(step.args[step.args.size() - 2])].data() : host_scale;
  const float beta = scale[lib.value("accumulate", false) ? 2 : 1];
  const float* bias = has_bias(e) ? data[size_t(step.args[3])].data() : nullptr;
  const OperandView a(lib.at("a")), bv(lib.at("b")), cv(lib.at("c"));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t kk = 0; kk < k; ++kk) sum += a.at(A, a.element(b, i, kk)) * bv.at(B, bv.element(b, kk, j));
        float& c = C[size_t(cv.element(b, i, j))];
        const double prior = beta == 0.f ? 0.0 : beta * double(c);  // beta 0: c is not read (BLAS)
        c = float(epilogue(e, scale[0] * sum + prior, bias ? bias[j] : 0.0));
      }
}

// Runs plan `p` on the CPU, its cuBLASLt steps emulated; returns the graph's first output.
std::vector<float> run_split_plan(const Plan& p, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& params) {
  testing::HostPlanBuffers host = testing::plan_buffers_on_cpu(p, inputs, params);
  std::vector<std::vector<float>>& data = host.data;
  for (const PlanKernel& k : p.kernels) {
    if (k.kind == StepKind::cublaslt) {
      emulate_library_step(k, data);
      continue;
    }
    std::vector<float*> args;
    for (int b : k.args) args.push_back(data[size_t(b)].data());
    // The copies' kernels split their work by blockIdx: their whole grid; other kernels are grid-stride loops.
    testing::run_on_cpu(k, args, k.schedule.contains("precision") ? k.grid : 1);
  }
  return data.at(size_t(host.output));
}

TEST(MatmulSplit, Fp16x3HoldsTheStrictTierWhereOneFp16RoundingDoesNot) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  for (auto& sample : testing::matmul_graphs()) {
    Graph g = graph_from_json(sample.graph);
    std::string key;  // the product's group (a broadcast batch has an expand before it)
    for (auto& grp : kernel_groups(g, true))
      if (grp.kind == GroupKind::matmul) key = grp.key;
    // Operands of every magnitude: the scale into fp16's range keeps 22 bits whether the inputs are 1e5 (fp16
    // overflows at 65504) or 1e-6 (fp16's subnormals); sizes where the emulation stays quick.
    for (double magnitude : {1.0, 1e5, 1e-6}) {
      if (magnitude != 1.0 && sample.name != "matmul_bmm" && sample.name != "linear_no_bias") continue;
      std::mt19937_64 rng(11);
      auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
      testing::scale_values(inputs, magnitude);
      testing::scale_values(params, magnitude);
      const std::vector<HostTensor> expected = interpret(primitive_graph(g), inputs, params);
      const double scale = magnitude * magnitude;  // the products' magnitude
      for (Precision precision : {Precision::fp16x3, Precision::fp16}) {
        // fp16 once per layout family is enough to show the check can tell (each run compiles two kernels).
        if (precision == Precision::fp16 && magnitude == 1.0 && sample.name.find("transposed") == std::string::npos &&
            sample.name != "matmul_large_k")
          continue;
        Schedule s;
        s.kernels[key] = {.strategy = Strategy::library, .precision = precision};
        Plan p = lower(g, s);
        // The copies' two kernels and the step, then the copy out of padded rows where n % 4 != 0; other plans have
        // an expand before, or an activation cuBLASLt lacks after the step.
        const bool padded = p.kernels.size() == 4 && p.kernels.back().name.ends_with("_compact");
        if (p.kernels.size() != 3 && !padded) continue;
        ASSERT_EQ(p.kernels[2].kind, StepKind::cublaslt);
        EXPECT_EQ(p.kernels[2].library.at("c").at("ld").get<int64_t>() % 4, 0) << sample.name << ": 16-byte result rows";
        const double worst = testing::worst_scaled_error(run_split_plan(p, inputs, params), expected[0], scale);
        if (precision == Precision::fp16x3) {
          EXPECT_LT(worst, 1e-4) << sample.name << " x" << magnitude << ": split precision off by " << worst;
          EXPECT_FALSE(p.below_fp32());
        } else {
          // One rounding of each operand (11 bits) is off by more than the strict tier allows, yet close.
          EXPECT_GT(worst, 1e-4) << sample.name << " x" << magnitude << ": fp16 this close means the check is blind";
          if (sample.name != "matmul_large_k") {
            EXPECT_LT(worst, 2e-2) << sample.name << " x" << magnitude;
          }
          EXPECT_TRUE(p.below_fp32());
        }
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 15 + 5 + 4);
}

TEST(MatmulSplit, TheCopiesArePaddedFp16PartsTheStepReadsInPlace) {
  Graph g = graph_from_json(testing::matmul_graph("matmul_batched_transposed_both"));
  KernelGroup grp = kernel_groups(g, true).at(0);
  Schedule s;
  s.kernels[grp.key] = {.strategy = Strategy::library, .precision = Precision::fp16x3};
  Plan p = lower(g, s);
  ASSERT_EQ(p.kernels.size(), 4u) << "absmax, copies, the product, the result's rows copied out";
  const nlohmann::json& lib = p.kernels[2].library;
  EXPECT_EQ(lib.at("precision"), "fp16x3");
  EXPECT_EQ(lib.at("k"), 3 * 24) << "K = 23 in three parts (hi, hi, lo against hi, lo, hi), each padded to 24";
  for (const char* o : {"a", "b"}) {
    EXPECT_EQ(lib.at(o).at("dtype"), "f16");
    EXPECT_EQ(lib.at(o).at("ld").get<int64_t>() % 8, 0) << o << ": 16-byte rows";
    EXPECT_TRUE(lib.at(o).at("transposed").get<bool>()) << o << ": still a flag, the copy keeps the stored layout";
  }
  // a (stored [3][23][19], read transposed): K runs along the stored rows, 3 x 24 of them of 19 -> 24 columns.
  EXPECT_EQ(lib.at("a").at("batch_stride"), 72 * 24);
  // b (stored [3][11][23], read transposed): K along its columns, 11 rows of 3 x 24.
  EXPECT_EQ(lib.at("b").at("ld"), 72);
  const std::vector<int>& args = p.kernels[2].args;
  ASSERT_EQ(args.size(), 5u) << "a, b, c, alpha, workspace";
  EXPECT_EQ(p.buffers[size_t(args[0])].dtype, DType::f16);
  EXPECT_EQ(p.buffers[size_t(args[3])].shape, (Shape{3})) << "alpha, beta 0 and beta 1";
  // The result (3 x 19 x 11 floats) in rows padded to 12 (16 bytes), then copied out into the graph's output.
  EXPECT_EQ(lib.at("c").at("ld"), 12);
  EXPECT_EQ(lib.at("c").at("batch_stride"), 19 * 12);
  EXPECT_EQ(p.buffers[size_t(args[2])].shape, (Shape{3 * 19 * 12}));
  ASSERT_EQ(p.kernels[3].args.size(), 2u);
  EXPECT_EQ(p.kernels[3].args[0], args[2]);
  EXPECT_EQ(p.buffers[size_t(p.kernels[3].args[1])].role, BufferRole::output);
  EXPECT_NO_THROW(check_library_step(p.kernels[2], p.buffers));
  // A step read from JSON that claims f32 operands over the f16 copies, or reads past them, is refused.
  auto refused = [&](const std::function<void(nlohmann::json&)>& change) {
    PlanKernel wrong = p.kernels[2];
    change(wrong.library);
    EXPECT_THROW(check_library_step(wrong, p.buffers), UserError) << wrong.library.dump();
  };
  refused([](auto& lib) { lib["a"]["dtype"] = "f32"; });
  refused([](auto& lib) { lib["precision"] = "fp32"; });
  refused([](auto& lib) { lib["k"] = 3 * 24 + 1; });
  refused([](auto& lib) { lib["precision"] = "bf16"; });
  refused([](auto& lib) { lib["workspace_bytes"] = -5; });
  refused([](auto& lib) { lib["c"]["dtype"] = "f16"; });
  refused([](auto& lib) { lib["b"]["batch_stride"] = int64_t(1) << 62; });
  // The alpha buffer: absent (one buffer short), or too small.
  PlanKernel short_of_alpha = p.kernels[2];
  short_of_alpha.args.erase(short_of_alpha.args.end() - 2);
  EXPECT_THROW(check_library_step(short_of_alpha, p.buffers), UserError);
  std::vector<PlanBuffer> small = p.buffers;
  small[size_t(p.kernels[2].args[3])].shape = {1};
  EXPECT_THROW(check_library_step(p.kernels[2], small), UserError);
}

// An fp16x3 product's reduction cut into pieces (schedule chunks; emit_matmul.cpp's reduction_pieces): one
// cuBLASLt step per piece, each reading its share of the copies' k through operand offsets (transposed operands
// and batches included), the first writing c, the others adding to it (beta = 1), only the last applying the
// epilogue with its bias. The emulated steps add up to the interpreter's product within the strict tier.
// The samples' forms at K = 700 (2112 of the copies' k: pieces hold at least 512 of it), so that there are pieces.
std::vector<std::pair<std::string, nlohmann::json>> long_reduction_graphs() {
  using nlohmann::json;
  const int64_t k = 700;
  using testing::node;
  using testing::value;
  auto linear = [&](const std::string& act, json attrs) {
    return json{{"inputs", {value("x", {45, k})}}, {"params", {value("w", {21, k}), value("bias", {21})}},
                {"nodes", {node("wt", "permute", {"w"}, {{"dims", {1, 0}}}), node("mm", "matmul", {"x", "wt"}),
                           node("biased", "add", {"mm", "bias"}), node("act", act, {"biased"}, attrs)}},
                {"outputs", {"act"}}};
  };
  return {{"transposed_a", {{"inputs", {value("a", {k, 9}), value("b", {k, 7})}},
                            {"nodes", {node("at", "permute", {"a"}, {{"dims", {1, 0}}}), node("y", "matmul", {"at", "b"})}},
                            {"outputs", {"y"}}}},
          {"batched_transposed_both",
           {{"inputs", {value("a", {3, k, 19}), value("b", {3, 11, k})}},
            {"nodes", {node("at", "permute", {"a"}, {{"dims", {0, 2, 1}}}), node("bt", "permute", {"b"}, {{"dims", {0, 2, 1}}}),
                       node("y", "matmul", {"at", "bt"})}},
            {"outputs", {"y"}}}},
          {"linear_bias_relu", linear("relu", json::object())},
          {"linear_bias_gelu_tanh", linear("gelu", {{"approximate", "tanh"}})},
          {"bmm", {{"inputs", {value("a", {3, 19, k}), value("b", {3, k, 11})}}, {"nodes", {node("y", "matmul", {"a", "b"})}}, {"outputs", {"y"}}}},
          {"matrix_times_3d",
           {{"inputs", {value("a", {9, k}), value("b", {4, k, 15})}}, {"nodes", {node("y", "matmul", {"a", "b"})}}, {"outputs", {"y"}}}}};
}

TEST(MatmulSplit, PiecesOfTheReductionAddUpToTheWholeProduct) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int checked = 0;
  // Also an operand shared by the whole batch (batch stride 0) and, at 8 and 64 pieces, a k too short for them
  // all (4 pieces of 512 and the rest).
  for (const auto& [name, graph] : long_reduction_graphs()) {
    Graph g = graph_from_json(graph);
    std::string key;
    for (auto& grp : kernel_groups(g, true))
      if (grp.kind == GroupKind::matmul) key = grp.key;
    std::mt19937_64 rng(5);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    const std::vector<HostTensor> expected = interpret(primitive_graph(g), inputs, params);
    for (int pieces : {2, 8, 64}) {
      Schedule s;
      s.kernels[key] = {.strategy = Strategy::library, .chunks = pieces, .precision = Precision::fp16x3};
      Plan p = lower(g, s);
      std::vector<const PlanKernel*> steps;
      for (const PlanKernel& k : p.kernels)
        if (k.kind == StepKind::cublaslt) steps.push_back(&k);
      ASSERT_EQ(steps.size(), pieces == 2 ? 2u : 5u) << name << ": " << pieces << " pieces";
      int64_t k_sum = 0;
      for (size_t i = 0; i < steps.size(); ++i) {
        const nlohmann::json& lib = steps[i]->library;
        k_sum += lib.at("k").get<int64_t>();
        EXPECT_EQ(lib.value("accumulate", false), i > 0) << name << " piece " << i;
        if (i + 1 < steps.size()) {
          EXPECT_EQ(lib.at("epilogue"), "none") << name << " piece " << i << ": the epilogue waits for the whole sum";
        }
        EXPECT_NO_THROW(check_library_step(*steps[i], p.buffers)) << name << " piece " << i;
      }
      EXPECT_EQ(k_sum % 24, 0) << name << ": the pieces cover the copies' three parts";
      const std::string bad = testing::mismatches(run_split_plan(p, inputs, params), expected[0], 1e-4);
      EXPECT_TRUE(bad.empty()) << name << ", " << pieces << " pieces:\n" << bad;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 18);
  // A reduction too short for two pieces of 512 (the sample's K = 70: 216 of the copies' k) stays one step.
  {
    Graph g = graph_from_json(testing::matmul_graph("linear_bias_relu"));
    std::string key;
    for (auto& grp : kernel_groups(g, true))
      if (grp.kind == GroupKind::matmul) key = grp.key;
    Schedule s;
    s.kernels[key] = {.strategy = Strategy::library, .chunks = 64, .precision = Precision::fp16x3};
    const Plan p = lower(g, s);
    EXPECT_EQ(std::count_if(p.kernels.begin(), p.kernels.end(), [](const PlanKernel& k) { return k.kind == StepKind::cublaslt; }), 1);
  }
  // Pieces are fp16x3's alone (other precisions' sums are not the tensor core's, or are cut by their input rounding).
  Graph g = graph_from_json(testing::matmul_graph("matmul_square"));
  const KernelGroup grp = kernel_groups(g, true).at(0);
  EXPECT_FALSE(is_legal(grp, {.strategy = Strategy::library, .chunks = 4, .precision = Precision::fp32}));
  EXPECT_FALSE(is_legal(grp, {.strategy = Strategy::library, .chunks = 3, .precision = Precision::fp16x3}));
  EXPECT_TRUE(is_legal(grp, {.strategy = Strategy::library, .chunks = 4, .precision = Precision::fp16x3}));
}

// torch.triu / tril of a product: the library steps compute row blocks of only the columns that reach the
// triangle (about half the product), and the result, zeroed outside it by the triangle op, is the interpreter's.
TEST(MatmulTriangle, RowBlocksComputeOnlyWhatReachesTheTriangle) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  const int64_t n = 530, k = 200;  // 600 of the copies' k: two pieces (512 and 88) where the schedule asks
  for (auto [upper, diagonal] : {std::pair{true, 0}, std::pair{true, 37}, std::pair{false, -5}, std::pair{false, 0}}) {
    nlohmann::json graph = {
        {"inputs", {{{"name", "a"}, {"shape", {n, k}}}, {{"name", "b"}, {"shape", {k, n}}}}},
        {"nodes", {{{"name", "p"}, {"op", "matmul"}, {"args", {"a", "b"}}},
                   {{"name", "y"}, {"op", "triangle"}, {"args", {"p"}}, {"attrs", {{"upper", upper}, {"diagonal", diagonal}}}}}},
        {"outputs", {"y"}}};
    Graph g = graph_from_json(graph);
    std::mt19937_64 rng(3);
    auto inputs = testing::random_values(g, g.inputs, rng);
    const std::vector<HostTensor> expected = interpret(primitive_graph(g), inputs, {});
    std::string key;
    for (auto& grp : kernel_groups(g, true))
      if (grp.kind == GroupKind::matmul) key = grp.key;
    for (auto [precision, pieces] : {std::pair{Precision::fp32, 1}, std::pair{Precision::fp16x3, 1}, std::pair{Precision::fp16x3, 2}}) {
      Schedule s;
      s.kernels[key] = {.strategy = Strategy::library, .chunks = pieces, .precision = precision};
      Plan p = lower(g, s);
      int64_t computed = 0, blocks = 0;
      for (const PlanKernel& step : p.kernels)
        if (step.kind == StepKind::cublaslt) {
          ++blocks;
          if (!step.library.value("accumulate", false)) computed += step.library.at("m").get<int64_t>() * step.library.at("n").get<int64_t>();
          EXPECT_NO_THROW(check_library_step(step, p.buffers)) << step.name;
        }
      EXPECT_EQ(blocks, 2 * pieces) << "530 rows: two blocks of at least 256, each in " << pieces << " pieces";
      EXPECT_LT(computed, n * n * 8 / 10) << "upper " << upper << " diagonal " << diagonal << ": about half the product";
      const std::vector<float> y = run_split_plan(p, inputs, {});
      std::string bad = testing::mismatches(y, expected[0], 1e-4);
      EXPECT_TRUE(bad.empty()) << "upper " << upper << " diagonal " << diagonal << " " << to_string(precision) << ":\n" << bad;
    }
  }
}

}  // namespace
}  // namespace kforge
