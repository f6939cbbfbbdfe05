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

TEST(HalfResults, AttentionAndAnMlpCrossMemoryIn16Bits) {
  for (const std::string dtype : {"f16", "bf16"}) {
    for (const std::string name : {"attention", "mlp_erf_gelu"}) {
      Plan p = lower(graph_from_json(half_graph(name, dtype)), {});
      auto lib = steps(p, StepKind::cublaslt);
      ASSERT_EQ(lib.size(), 2u) << name;
      for (const PlanKernel* k : lib) {
        EXPECT_TRUE(k->library.value("direct", false)) << name << " " << k->name << ": both products read 16-bit operands";
        EXPECT_EQ(k->library.at("a").at("dtype"), dtype);
        EXPECT_EQ(k->library.at("c").at("dtype"), dtype) << name << " " << k->name;
        EXPECT_NO_THROW(check_library_step(*k, p.buffers));
      }
      EXPECT_EQ(p.buffers.at(lib[1]->args[2]).role, BufferRole::output) << name << ": the second product writes the result";
      EXPECT_TRUE(f32_temps(p).empty()) << name << " " << dtype << ": " << *f32_temps(p).begin();
    }
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

// A task with f32 tensors beside its half-precision ones computes in f32 where PyTorch does: nothing is rounded.
TEST(HalfResults, AMixedTaskKeepsF32Results) {
  nlohmann::json j = half_graph("attention", "f16");
  j["inputs"][2]["dtype"] = "f32";  // v in f32, read through a cast from f32 to f32
  Plan p = lower(graph_from_json(j), {});
  for (const PlanKernel* k : steps(p, StepKind::cublaslt)) EXPECT_EQ(k->library.at("c").value("dtype", "f32"), "f32") << k->name;
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

}  // namespace
}  // namespace kforge
