// Library results and operands of a half-precision task in its dtype (codegen/half_results.h): the products and
// convolutions read and write 16-bit values, the kernels between them store 16-bit operands, a Linear that is the
// task's result is one library call writing it, the graph computes the task's function within half precision's
// rounding, the library steps pass their checks and every generated kernel compiles for sm_90.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "codegen/lower.h"
#include "common/half_graphs.h"
#include "common/plan_steps.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/interpreter.h"
#include "runtime/compiler.h"

namespace kforge {
namespace {

using testing::steps;

nlohmann::json half_graph(const std::string& name, const std::string& dtype) {
  for (auto& s : testing::half_library_graphs(dtype))
    if (s.name == name) return s.graph;
  throw std::runtime_error("no half graph " + name);
}

// The plan's temporary f32 buffers as large as its output (the library workspaces aside): what crosses memory in
// f32 beyond a row's statistics.
std::set<std::string> f32_temps(const Plan& p) {
  int64_t output = 0;
  for (const PlanBuffer& b : p.buffers)
    if (b.role == BufferRole::output) output = numel(b.shape);
  std::set<std::string> names;
  for (const PlanBuffer& b : p.buffers)
    if (b.role == BufferRole::temp && b.dtype == DType::f32 && numel(b.shape) >= output &&
        b.name.find("workspace") == std::string::npos)
      names.insert(b.name);
  return names;
}

TEST(HalfResults, ALinearThatIsTheTasksResultIsOneLibraryCallWritingIt) {
  for (const std::string dtype : {"f16", "bf16"}) {
    Plan p = lower(graph_from_json(half_graph("linear_relu", dtype)), {});
    ASSERT_EQ(p.kernels.size(), 1u) << dtype << ": no kernel storing a cast, widening or narrowing the result";
    const PlanKernel& mm = p.kernels[0];
    ASSERT_EQ(mm.kind, StepKind::cublaslt);
    EXPECT_EQ(mm.library.at("c").at("dtype"), dtype);
    EXPECT_EQ(mm.library.at("epilogue"), "bias_relu");
    const PlanBuffer &c = p.buffers.at(mm.args[2]), &bias = p.buffers.at(mm.args[3]);
    EXPECT_EQ(c.role, BufferRole::output);
    EXPECT_EQ(to_string(c.dtype), dtype);
    EXPECT_EQ(bias.name, "bias") << "the bias is read as stored, in the result's dtype";
    EXPECT_NO_THROW(check_library_step(mm, p.buffers));
    EXPECT_NO_THROW(Plan::from_json(p.to_json())) << "a plan read back is checked again";
  }
}

TEST(HalfResults, AnMlpCrossesMemoryIn16BitsAndAttentionNotAtAll) {
  for (const std::string dtype : {"f16", "bf16"}) {
    Plan p = lower(graph_from_json(half_graph("mlp_erf_gelu", dtype)), {});
    auto lib = steps(p, StepKind::cublaslt);
    ASSERT_EQ(lib.size(), 2u);
    for (const PlanKernel* k : lib) {
      EXPECT_TRUE(k->library.value("direct", false)) << k->name << ": both products read 16-bit operands";
      EXPECT_EQ(k->library.at("a").at("dtype"), dtype);
      EXPECT_EQ(k->library.at("c").at("dtype"), dtype) << k->name;
      EXPECT_NO_THROW(check_library_step(*k, p.buffers));
    }
    EXPECT_EQ(p.buffers.at(lib[1]->args[2]).role, BufferRole::output) << "the second product writes the result";
    EXPECT_TRUE(f32_temps(p).empty()) << dtype << ": " << *f32_temps(p).begin();
    // Attention is one kernel (codegen/attention_fusion.h) reading the 16-bit q, k, v and writing the 16-bit result:
    // its scores and weights never cross memory.
    Plan a = lower(graph_from_json(half_graph("attention", dtype)), {});
    ASSERT_EQ(a.kernels.size(), 1u) << dtype;
    EXPECT_EQ(a.kernels[0].kind, StepKind::nvrtc);
    for (int b : a.kernels[0].args) EXPECT_EQ(to_string(a.buffers.at(b).dtype), dtype) << a.buffers.at(b).name;
  }
}

TEST(HalfResults, ConvolutionsReadAndWrite16Bits) {
  for (const std::string dtype : {"f16", "bf16"}) {
    Plan p = lower(graph_from_json(half_graph("conv_scale_conv", dtype)), {});
    auto lib = steps(p, StepKind::cudnn);
    ASSERT_EQ(lib.size(), 2u);
    for (const PlanKernel* k : lib) {
      EXPECT_EQ(k->library.at("precision"), dtype == "f16" ? "fp16" : "bf16");
      EXPECT_NO_THROW(check_library_step(*k, p.buffers));
    }
    EXPECT_TRUE(f32_temps(p).empty()) << dtype << ": " << *f32_temps(p).begin();
    const PlanBuffer& out = *std::find_if(p.buffers.begin(), p.buffers.end(), [](auto& b) { return b.role == BufferRole::output; });
    EXPECT_EQ(to_string(out.dtype), dtype);
  }
}

// The task as PyTorch computes it in half precision: every op's result rounded to the task's dtype (a copy of the
// decomposed graph with its f32 values retyped; the interpreter rounds elementwise and library results).
Graph rounded_every_op(const Graph& decomposed, DType d) {
  Graph g = decomposed;
  for (Node& n : g.nodes)
    if (n.type.dtype == DType::f32 && n.op != "reduce") n.type.dtype = d;
  return g;
}

double worst_error(const HostTensor& got, const HostTensor& exact) {
  double worst = 0;
  for (size_t i = 0; i < got.data.size(); ++i) worst = std::max(worst, std::abs(got.data[i] - exact.data[i]));
  return worst;
}

// The rewritten graph is the task's function within PyTorch's own half-precision error: against the task computed
// exactly (every op in double, rounded once at the end), the primitive graph (rounded where values cross memory)
// errs no more than PyTorch's rounding of every op does, give or take one unit in the last place of the output.
TEST(HalfResults, ThePrimitiveGraphErrsNoMoreThanPyTorchsHalfPrecision) {
  for (const std::string dtype : {"f16", "bf16"}) {
    for (auto& s : testing::half_library_graphs(dtype)) {
      Graph g = graph_from_json(s.graph);
      const Graph d = decompose(g);
      for (uint64_t seed : {11, 12, 13}) {
        std::mt19937_64 rng(seed);
        auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
        const auto exact = interpret(d, inputs, params), ours = interpret(primitive_graph(g), inputs, params),
                   pytorch = interpret(rounded_every_op(d, dtype_from_string(dtype)), inputs, params);
        double largest = 0;
        for (double v : exact[0].data) largest = std::max(largest, std::abs(v));
        const double ulp = largest * (dtype == "f16" ? 0x1p-10 : 0x1p-7);
        EXPECT_LE(worst_error(ours[0], exact[0]), worst_error(pytorch[0], exact[0]) + ulp) << s.name << " " << dtype << " seed " << seed;
      }
    }
  }
}

// A product that is itself a graph output (an f32 result of a half-precision task) keeps its f32 result.
TEST(HalfResults, AnF32OutputStaysF32) {
  nlohmann::json j = half_graph("linear_relu", "f16");
  j["outputs"] = {"mm"};
  Plan p = lower(graph_from_json(j), {});
  auto lib = steps(p, StepKind::cublaslt);
  ASSERT_EQ(lib.size(), 1u);
  EXPECT_EQ(lib[0]->library.at("c").value("dtype", "f32"), "f32");
  EXPECT_EQ(p.buffers.at(lib[0]->args[2]).dtype, DType::f32);
}

// A product PyTorch computes in f32 (its operands made f32 by `.float()`: the importer leaves it unmarked) keeps f32
// operands and result: nothing is rounded for it.
TEST(HalfResults, AProductPyTorchComputesInF32StaysF32) {
  nlohmann::json j = half_graph("mlp_erf_gelu", "f16");
  j["nodes"][8].erase("attrs");  // m2 = g @ w2
  ASSERT_EQ(j["nodes"][8]["name"], "m2");
  Plan p = lower(graph_from_json(j), {});
  auto lib = steps(p, StepKind::cublaslt);
  ASSERT_EQ(lib.size(), 2u);
  EXPECT_EQ(lib[0]->library.at("c").at("dtype"), "f16") << "the first product is PyTorch's f16 one";
  EXPECT_EQ(lib[1]->library.at("c").value("dtype", "f32"), "f32");
  EXPECT_EQ(lib[1]->library.at("a").value("dtype", "f32"), "f32") << "the GELU's output is not rounded for it";
}

// The importer marks products and convolutions of 16-bit operands; an unmarked graph (a bundle written before)
// keeps every library result in f32.
TEST(HalfResults, UnmarkedProductsKeepF32Results) {
  nlohmann::json j = half_graph("mlp_erf_gelu", "bf16");
  for (auto& n : j["nodes"])
    if (n.contains("attrs")) n["attrs"].erase("storage_dtype");
  const Plan p = lower(graph_from_json(j), {});
  for (const PlanKernel* k : steps(p, StepKind::cublaslt))
    EXPECT_EQ(k->library.at("c").value("dtype", "f32"), "f32") << k->name;
}

// A product of a 3-D tensor (a reshape of it to rows, and of the result back) feeds the next product through the
// reshape, an alias: no kernel widens or copies the 16-bit result between them. A value two products read is
// rounded once.
TEST(HalfResults, ReshapedAndSharedOperandsCostNoKernel) {
  nlohmann::json j = nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [4, 6, 32], "dtype": "f16"}],
    "params": [{"name": "w1", "shape": [32, 32], "dtype": "f16"}, {"name": "w2", "shape": [32, 16], "dtype": "f16"}],
    "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
              {"name": "w1f", "op": "cast", "args": ["w1"], "attrs": {"dtype": "f32"}},
              {"name": "w2f", "op": "cast", "args": ["w2"], "attrs": {"dtype": "f32"}},
              {"name": "m1", "op": "matmul", "args": ["xf", "w1f"], "attrs": {"storage_dtype": "f16"}},
              {"name": "m2", "op": "matmul", "args": ["m1", "w2f"], "attrs": {"storage_dtype": "f16"}},
              {"name": "t", "op": "tanh", "args": ["xf"]},
              {"name": "m3", "op": "matmul", "args": ["t", "w1f"], "attrs": {"storage_dtype": "f16"}},
              {"name": "m4", "op": "matmul", "args": ["t", "w2f"], "attrs": {"storage_dtype": "f16"}},
              {"name": "o2", "op": "cast", "args": ["m2"], "attrs": {"dtype": "f16"}},
              {"name": "o3", "op": "cast", "args": ["m3"], "attrs": {"dtype": "f16"}},
              {"name": "o4", "op": "cast", "args": ["m4"], "attrs": {"dtype": "f16"}}],
    "outputs": ["o2", "o3", "o4"]})");
  const Plan p = lower(graph_from_json(j), {});
  auto lib = steps(p, StepKind::cublaslt);
  ASSERT_EQ(lib.size(), 4u);
  for (const PlanKernel* k : lib) EXPECT_TRUE(k->library.value("direct", false)) << k->name;
  int roundings = 0;
  for (const PlanBuffer& b : p.buffers) {
    EXPECT_FALSE(b.role == BufferRole::temp && b.dtype == DType::f32 && b.name.find("workspace") == std::string::npos)
        << "an f32 copy: " << b.name;
    roundings += b.name.rfind("t_", 0) == 0 && b.dtype == DType::f16;
  }
  EXPECT_EQ(roundings, 1) << "tanh(x) rounded once for both products";
}

TEST(HalfResults, EveryKernelCompilesForSm90) {
  Compiler c({"sm_90", "", {}});
  for (const std::string dtype : {"f16", "bf16"})
    for (auto& s : testing::half_library_graphs(dtype))
      for (bool fuse_rows : {true, false}) {
        Schedule schedule;
        schedule.fuse_rows = fuse_rows;
        for (const PlanKernel& k : lower(graph_from_json(s.graph), schedule).kernels) {
          if (k.kind != StepKind::nvrtc) continue;
          CompileResult r = c.compile(k.source, k.name);
          EXPECT_TRUE(r.ok) << s.name << " " << dtype << " " << k.name << "\n" << r.log;
        }
      }
}


// Scores that a softmax exponentiates keep f32: 16-bit scores of magnitude 2000 are 2 apart, a factor e between two
// probabilities.
TEST(HalfResults, ScoresASoftmaxExponentiatesStayF32) {
  const nlohmann::json j = nlohmann::json::parse(R"({"inputs": [{"name": "a", "shape": [2, 32, 64], "dtype": "f16"},
      {"name": "b", "shape": [2, 64, 48], "dtype": "f16"}],
    "nodes": [{"name": "af", "op": "cast", "args": ["a"], "attrs": {"dtype": "f32"}},
              {"name": "bf", "op": "cast", "args": ["b"], "attrs": {"dtype": "f32"}},
              {"name": "s", "op": "matmul", "args": ["af", "bf"], "attrs": {"storage_dtype": "f16"}},
              {"name": "p", "op": "softmax", "args": ["s"], "attrs": {"dim": 2}},
              {"name": "out", "op": "cast", "args": ["p"], "attrs": {"dtype": "f16"}}],
    "outputs": ["out"]})");
  Plan p = lower(graph_from_json(j), {});
  int products = 0;
  for (const PlanKernel& k : p.kernels)
    if (k.kind == StepKind::cublaslt) {
      ++products;
      EXPECT_EQ(k.library.at("c").value("dtype", "f32"), "f32");
      EXPECT_EQ(k.library.at("a").at("dtype"), "f16") << "the operands are still read as stored";
    }
  EXPECT_EQ(products, 1);
}

}  // namespace
}  // namespace kforge
