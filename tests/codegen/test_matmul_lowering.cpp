// Lowering of matrix products (GPU-free): each product is one cuBLASLt step, a Linear's bias and ReLU /
// tanh-GELU fold into its epilogue and nothing else does, transposing views become flags instead of
// copies, batch strides follow the canonical form, and plans and schedules round-trip through JSON.
#include <gtest/gtest.h>

#include <random>

#include "codegen/gemm_epilogue.h"
#include "codegen/lower.h"
#include "common/half_graphs.h"
#include "common/plan_steps.h"
#include "common/matmul_graphs.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "runtime/compiler.h"
#include "search/measure.h"
#include "search/starved_schedules.h"

namespace kforge {
namespace {

Plan lower_sample(const std::string& name, const Schedule& s = {}) {
  return lower(graph_from_json(testing::matmul_graph(name)), s);
}

using testing::half_linear;
using testing::steps;

TEST(MatmulLowering, EveryProductIsOneCublasLtStep) {
  for (auto& s : testing::matmul_graphs()) {
    Plan p = lower(graph_from_json(s.graph), {});
    auto lib = steps(p, StepKind::cublaslt);
    // A triangular product's steps are row blocks (test_matmul_split_on_cpu.cpp runs them).
    ASSERT_EQ(lib.size(), s.name == "matmul_triu" ? 2u : 1u) << s.name;
    EXPECT_TRUE(lib[0]->source.empty()) << s.name;
    EXPECT_EQ(lib[0]->library.at("op"), "matmul");
    EXPECT_EQ(lib[0]->library.at("precision"), "fp32") << "the default is the strict tier's arithmetic";
    EXPECT_EQ(lib[0]->library.at("algo"), 0);
    const PlanBuffer& ws = p.buffers.at(lib[0]->args.back());
    EXPECT_EQ(ws.role, BufferRole::temp);
    EXPECT_EQ(ws.bytes(), 32 << 20);
  }
}

TEST(MatmulLowering, LinearBiasAndReluFoldIntoTheEpilogue) {
  Plan p = lower_sample("linear_bias_relu");
  ASSERT_EQ(p.kernels.size(), 1u) << "bias and relu need no kernel of their own";
  const auto& lib = p.kernels[0].library;
  EXPECT_EQ(lib.at("epilogue"), "bias_relu");
  EXPECT_EQ(lib.at("m"), 45);
  EXPECT_EQ(lib.at("n"), 21);
  EXPECT_EQ(lib.at("k"), 70);
  EXPECT_FALSE(lib.at("a").at("transposed"));
  EXPECT_TRUE(lib.at("b").at("transposed")) << "Linear's weight [N, K] is read transposed, not copied";
  EXPECT_EQ(lib.at("b").at("ld"), 70);
  // args: x, w (the permute's source), the output, the bias, the workspace.
  const auto& args = p.kernels[0].args;
  ASSERT_EQ(args.size(), 5u);
  EXPECT_EQ(p.buffers[args[0]].name, "x");
  EXPECT_EQ(p.buffers[args[1]].name, "w");
  EXPECT_EQ(p.buffers[args[2]].role, BufferRole::output);
  EXPECT_EQ(p.buffers[args[3]].name, "bias");
}

TEST(MatmulLowering, OnlyWhatCublasLtComputesExactlyIsFolded) {
  auto epilogue_and_kernels = [](const std::string& name) {
    Plan p = lower_sample(name);
    return std::make_pair(steps(p, StepKind::cublaslt)[0]->library.at("epilogue").get<std::string>(),
                          steps(p, StepKind::nvrtc).size());
  };
  EXPECT_EQ(epilogue_and_kernels("linear_no_bias"), std::make_pair(std::string("none"), size_t(0)));
  EXPECT_EQ(epilogue_and_kernels("linear_bias"), std::make_pair(std::string("bias"), size_t(0)));
  EXPECT_EQ(epilogue_and_kernels("linear_relu"), std::make_pair(std::string("relu"), size_t(0)));
  EXPECT_EQ(epilogue_and_kernels("linear_bias_gelu_tanh"), std::make_pair(std::string("bias_gelu"), size_t(0)));
  // cuBLASLt's GELU is the tanh approximation: an exact (erf) GELU stays a kernel, as does a sigmoid.
  EXPECT_EQ(epilogue_and_kernels("linear_bias_gelu_erf"), std::make_pair(std::string("bias"), size_t(1)));
  EXPECT_EQ(epilogue_and_kernels("linear_bias_sigmoid"), std::make_pair(std::string("bias"), size_t(1)));
}

TEST(MatmulLowering, AProductReadElsewhereKeepsItsOwnOutput) {
  Graph g = graph_from_json(testing::matmul_graph("linear_bias_relu"));
  g.outputs.insert(g.outputs.begin(), g.find("mm"));  // the raw product is an output too
  Plan p = lower(g, {});
  EXPECT_EQ(steps(p, StepKind::cublaslt)[0]->library.at("epilogue"), "none");
  EXPECT_EQ(steps(p, StepKind::nvrtc).size(), 1u);
}

TEST(MatmulLowering, TransposedViewsAreFlagsNotCopies) {
  Plan p = lower_sample("matmul_batched_transposed_both");
  ASSERT_EQ(p.kernels.size(), 1u);
  const auto& lib = p.kernels[0].library;
  EXPECT_TRUE(lib.at("a").at("transposed"));
  EXPECT_TRUE(lib.at("b").at("transposed"));
  EXPECT_EQ(lib.at("batch"), 3);
  EXPECT_EQ(lib.at("a").at("ld"), 19);  // a is stored [3, 23, 19]
  EXPECT_EQ(lib.at("a").at("batch_stride"), 23 * 19);
  EXPECT_EQ(lib.at("c").at("batch_stride"), 19 * 11);
  p = lower_sample("matmul_transposed_a");
  EXPECT_EQ(p.kernels.size(), 1u);
  EXPECT_TRUE(p.kernels[0].library.at("a").at("transposed"));
  // A transposed batch times one matrix keeps its batch (b's stride 0) rather than being copied to fold it.
  p = lower_sample("matmul_transposed_3d_times_matrix");
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_TRUE(p.kernels[0].library.at("a").at("transposed"));
  EXPECT_EQ(p.kernels[0].library.at("batch"), 4);
  EXPECT_EQ(p.kernels[0].library.at("b").at("batch_stride"), 0);
  // A transposed matrix brought to the batch's rank stays a view of its source.
  p = lower_sample("matmul_transposed_matrix_times_3d");
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_TRUE(p.kernels[0].library.at("a").at("transposed"));
  EXPECT_EQ(p.kernels[0].library.at("a").at("batch_stride"), 0);
}

TEST(MatmulLowering, BatchStridesFollowTheCanonicalForm) {
  // [4, 9, 31] @ [31, 15]: one product of 36 rows.
  auto lib = lower_sample("matmul_3d_times_matrix").kernels[0].library;
  EXPECT_EQ(lib.at("batch"), 1);
  EXPECT_EQ(lib.at("m"), 36);
  // [9, 31] @ [4, 31, 15]: a's one matrix serves every batch entry (stride 0).
  lib = lower_sample("matmul_matrix_times_3d").kernels[0].library;
  EXPECT_EQ(lib.at("batch"), 4);
  EXPECT_EQ(lib.at("a").at("batch_stride"), 0);
  EXPECT_EQ(lib.at("b").at("batch_stride"), 31 * 15);
  // [2, 1, 9, 13] @ [3, 13, 5]: no single stride describes either operand, so both are expanded by kernels.
  Plan p = lower_sample("matmul_broadcast_batch");
  EXPECT_EQ(steps(p, StepKind::nvrtc).size(), 2u);
  EXPECT_EQ(steps(p, StepKind::cublaslt)[0]->library.at("batch"), 6);
}

TEST(MatmulLowering, EpilogueFoldingKeepsTheFunction) {
  std::mt19937_64 rng(3);
  for (auto& s : testing::matmul_graphs()) {
    Graph g = graph_from_json(s.graph);
    Graph prim = decompose(g);
    auto in = testing::random_values(g, g.inputs, rng), par = testing::random_values(g, g.params, rng);
    auto want = interpret(prim, in, par), got = interpret(fold_gemm_epilogues(prim), in, par);
    for (size_t i = 0; i < want[0].data.size(); ++i)
      ASSERT_NEAR(got[0].data[i], want[0].data[i], 1e-9) << s.name << " element " << i;
  }
}

TEST(MatmulPlanJson, LibraryStepsRoundTripAndOldPlansAreNvrtc) {
  Schedule s;
  Plan p = lower_sample("linear_bias_relu");
  KernelSchedule ks{Strategy::library, 256, 1, 1, 1, RowCache::none, Precision::tf32, 3};
  s.kernels[p.kernels[0].group] = ks;
  p = lower_sample("linear_bias_relu", s);
  Plan back = Plan::from_json(nlohmann::json::parse(p.to_json().dump()));
  ASSERT_EQ(back.kernels.size(), 1u);
  EXPECT_EQ(back.kernels[0].kind, StepKind::cublaslt);
  EXPECT_EQ(back.kernels[0].library, p.kernels[0].library);
  EXPECT_EQ(back.kernels[0].library.at("precision"), "tf32");
  EXPECT_EQ(back.kernels[0].library.at("algo"), 3);
  EXPECT_EQ(back.schedule, s);
  EXPECT_TRUE(back.below_fp32());
  // A plan written before library steps existed has no "kind": its kernels are NVRTC kernels.
  nlohmann::json old = lower(graph_from_json(testing::sample_graph("relu")), {}).to_json();
  for (auto& k : old["kernels"]) {
    EXPECT_FALSE(k.contains("kind"));
    EXPECT_FALSE(k.contains("library"));
  }
  EXPECT_EQ(Plan::from_json(old).kernels[0].kind, StepKind::nvrtc);
  EXPECT_FALSE(Plan::from_json(old).below_fp32());
  nlohmann::json broken = p.to_json();
  broken["kernels"][0].erase("library");
  EXPECT_THROW(Plan::from_json(broken), UserError);
  broken["kernels"][0]["kind"] = "cudnn";
  EXPECT_THROW(Plan::from_json(broken), UserError);
}

TEST(MatmulPlanJson, LibraryStepsMustFitTheirBuffers) {
  nlohmann::json good = lower_sample("matmul_bmm").to_json();
  EXPECT_NO_THROW(Plan::from_json(good));
  auto refused = [&](const std::string& why, auto edit) { testing::expect_step_refused(good, 0, why, edit); };
  refused("a needs 1748 f32 elements, buffer 'a' holds 1311", [](auto& k) { k["library"]["batch"] = 4; });  // one batch entry too many
  refused("operand b: leading dim 5", [](auto& k) { k["library"]["b"]["ld"] = 5; });
  refused("takes 5 buffers, got 4", [](auto& k) { k["library"]["epilogue"] = "bias"; });
  refused("m, n, k and batch must be at least 1", [](auto& k) { k["library"]["k"] = 0; });
  refused("malformed parameters", [](auto& k) { k["library"].erase("c"); });
}

TEST(MatmulSchedule, PrecisionAndAlgorithmAreSearchActions) {
  Graph g = graph_from_json(testing::matmul_graph("matmul_square"));
  auto groups = kernel_groups(g, true);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].kind, GroupKind::matmul);
  KernelSchedule def = default_schedule(groups[0]);
  EXPECT_EQ(def.strategy, Strategy::library);
  EXPECT_EQ(def.precision, Precision::fp32);
  EXPECT_EQ(def.algo, 0);
  auto space = schedule_space(groups[0]);
  EXPECT_EQ(space.size(), size_t(4 * kMatmulAlgos + 6 * kMatmulAlgos + 8))
      << "cuBLASLt in fp32, tf32, fp16x3 and fp16, fp16x3 also in 2 to 64 pieces of the reduction; kforge's mma in "
         "tf32x3 and tf32, for 1 or 2 blocks per SM, 1- or 4-float copies";
  EXPECT_FALSE(starves_memory(groups[0], def, GpuFacts{}));
  // Distinct choices are distinct plans to the search (its duplicate filter keys on plan_key).
  Schedule a, b;
  a.kernels[groups[0].key] = space[0];
  b.kernels[groups[0].key] = space[1];
  EXPECT_NE(plan_key(lower(g, a)), plan_key(lower(g, b)));
  // JSON: library schedules carry precision and algo; other schedules' JSON is what it was.
  Schedule back = schedule_from_json(to_json(b));
  EXPECT_EQ(back, b);
  Schedule other;
  other.kernels["y"] = KernelSchedule{};
  EXPECT_FALSE(to_json(other)["kernels"]["y"].contains("precision"));
}

TEST(MatmulSchedule, IllegalChoicesNameTheField) {
  Graph g = graph_from_json(testing::matmul_graph("matmul_square"));
  KernelGroup mm = kernel_groups(g, true)[0];
  KernelSchedule ks = default_schedule(mm);
  ks.algo = kMatmulAlgos;
  EXPECT_THROW(check_schedule(mm, ks), UserError);
  ks = default_schedule(mm);
  ks.strategy = Strategy::flat;
  EXPECT_THROW(check_schedule(mm, ks), UserError);
  KernelGroup pw = kernel_groups(graph_from_json(testing::sample_graph("relu")), true)[0];
  KernelSchedule lib = default_schedule(pw);
  lib.strategy = Strategy::library;
  try {
    check_schedule(pw, lib);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("library is for matrix products and convolutions only"), std::string::npos) << e.what();
  }
  lib = default_schedule(pw);
  lib.precision = Precision::tf32;
  EXPECT_THROW(check_schedule(pw, lib), UserError);
  EXPECT_THROW(precision_from_string("fp8"), UserError);
  KernelSchedule half = default_schedule(mm);
  half.precision = Precision::bf16;
  EXPECT_THROW(check_schedule(mm, half), UserError) << "bf16 copies are a convolution's choice only";
  // fp16 copies (one rounding, or split hi/lo parts) are cuBLASLt's; never kforge's mma kernel or a convolution's
  // split.
  for (Precision p : {Precision::fp16, Precision::fp16x3}) {
    half.precision = p;
    EXPECT_NO_THROW(check_schedule(mm, half)) << to_string(p);
    half.strategy = Strategy::mma;
    half.block = kMmaThreads;
    EXPECT_THROW(check_schedule(mm, half), UserError) << to_string(p);
    half = default_schedule(mm);
  }
  EXPECT_EQ(precision_from_string("fp16x3"), Precision::fp16x3);
}

// A Linear of a half-precision task (ir/types.h: x and the weights stored in f16 or bf16, each read through a cast):
// the library reads the stored tensors (f16 / bf16 operands, fp32 sums), no cast of them is stored, the product's
// precision is fixed to its operands' dtype; rows that are not 16-byte multiples keep the stored casts instead.
TEST(MatmulHalfOperands, AProductOfHalfPrecisionTensorsReadsThemAsStored) {
  for (const std::string dtype : {"f16", "bf16"}) {
    Graph g = graph_from_json(half_linear(dtype, 96));
    GraphAnalysis analysis(g);
    const KernelGroup* mm = nullptr;
    for (const KernelGroup& k : analysis.groups(true))
      if (k.kind == GroupKind::matmul) mm = &k;
    ASSERT_NE(mm, nullptr);
    ASSERT_TRUE(mm->half_operands.has_value()) << dtype;
    const Precision own = dtype == "bf16" ? Precision::bf16 : Precision::fp16;
    EXPECT_EQ(default_schedule(*mm).precision, own);
    for (const KernelSchedule& ks : schedule_space(*mm)) EXPECT_EQ(ks.precision, own) << dtype;
    KernelSchedule other = default_schedule(*mm);
    other.precision = Precision::fp32;
    EXPECT_THROW(check_schedule(*mm, other), UserError) << "the operands are half precision: no other arithmetic";
    Plan p = lower(analysis, {});
    auto lib = steps(p, StepKind::cublaslt);
    ASSERT_EQ(lib.size(), 1u);
    EXPECT_EQ(lib[0]->library.at("a").at("dtype"), dtype);
    EXPECT_EQ(lib[0]->library.at("b").at("dtype"), dtype);
    EXPECT_TRUE(lib[0]->library.at("b").at("transposed"));
    EXPECT_TRUE(lib[0]->library.value("direct", false));
    EXPECT_EQ(p.buffers[lib[0]->args[0]].name, "x");
    EXPECT_EQ(p.buffers[lib[0]->args[1]].name, "w");
    for (const PlanBuffer& b : p.buffers) EXPECT_TRUE(b.name != "xf" && b.name != "wf") << "no stored cast: " << b.name;
    EXPECT_NO_THROW(check_library_step(*lib[0], p.buffers));
    Plan back = Plan::from_json(p.to_json());  // a plan read back is checked again
    EXPECT_EQ(back.kernels.size(), p.kernels.size());
  }
  // Rows of 100 halves are not 16-byte multiples: the casts are stored and the product reads f32 as before.
  Graph odd = graph_from_json(half_linear("f16", 100));
  Plan p = lower(odd, {});
  auto lib = steps(p, StepKind::cublaslt);
  ASSERT_EQ(lib.size(), 1u);
  EXPECT_EQ(lib[0]->library.at("a").value("dtype", "f32"), "f32");
  EXPECT_FALSE(lib[0]->library.value("direct", false));
}

// The copies' kernels of fp16 and fp16x3 products (emit_matmul_split.cpp) compile for sm_90 on every sample:
// transposed, batched, broadcast, vector, triangular row blocks.
TEST(MatmulSplit, TheCopiesKernelsCompileForSm90OnEverySample) {
  Compiler c({"sm_90", "", {}});
  int compiled = 0;
  for (auto& sample : testing::matmul_graphs()) {
    Graph g = graph_from_json(sample.graph);
    for (auto& grp : kernel_groups(g, true)) {
      if (grp.kind != GroupKind::matmul) continue;
      for (Precision precision : {Precision::fp16x3, Precision::fp16}) {
        Schedule s;
        s.kernels[grp.key] = {.strategy = Strategy::library, .precision = precision};
        for (const PlanKernel& k : lower(g, s).kernels) {
          if (k.kind != StepKind::nvrtc) continue;
          CompileResult r = c.compile(k.source, k.name);
          ASSERT_TRUE(r.ok) << sample.name << " " << to_string(precision) << "\n" << r.log;
          ++compiled;
        }
      }
    }
  }
  EXPECT_GE(compiled, 2 * 2 * 18);
}

// kforge's own tensor-core GEMM (strategy mma): one generated kernel per product, reading the operands where
// they are (transposed views as flags, batch strides), with the epilogue in its store; tf32x3 keeps the strict
// tier (Plan::below_fp32 is false), tf32 does not. Every product form compiles for sm_90 in both precisions.
TEST(MatmulMma, EveryProductIsOneKernelThatCompilesForSm90InBothPrecisions) {
  Compiler c({"sm_90", "", {}});
  for (auto& sample : testing::matmul_graphs()) {
    Graph g = graph_from_json(sample.graph);
    for (auto [precision, vec] : {std::pair{Precision::tf32x3, 4}, std::pair{Precision::tf32x3, 1}, std::pair{Precision::tf32, 4}}) {
      Schedule s;
      for (auto& grp : kernel_groups(g, true))
        if (grp.kind == GroupKind::matmul)
          s.kernels[grp.key] = {.strategy = Strategy::mma, .vec = vec, .precision = precision};
      Plan p = lower(g, s);
      EXPECT_TRUE(steps(p, StepKind::cublaslt).empty()) << sample.name;
      EXPECT_EQ(p.below_fp32(), precision == Precision::tf32) << sample.name;
      auto mma = std::find_if(p.kernels.begin(), p.kernels.end(),
                              [](const PlanKernel& k) { return k.schedule.value("strategy", "") == "mma"; });
      ASSERT_NE(mma, p.kernels.end()) << sample.name;
      const PlanKernel& k = *mma;
      EXPECT_EQ(k.kind, StepKind::nvrtc);
      EXPECT_EQ(k.block, kMmaThreads);
      EXPECT_EQ(k.schedule.at("precision"), to_string(precision));
      EXPECT_NE(k.source.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
      CompileResult r = c.compile(k.source, k.name);
      ASSERT_TRUE(r.ok) << sample.name << " " << to_string(precision) << " vec " << vec << "\n" << r.log << "\n" << k.source;
    }
  }
}

// The kernel keeps its fragments and accumulators in registers: with 4-float staging and one block per SM,
// ptxas reports no spills and no stack frame (a fragment array indexed by a loop the compiler did not unroll
// once put 384 bytes in local memory).
TEST(MatmulMma, FragmentsAndAccumulatorsStayInRegisters) {
  Compiler c({"sm_90", "", {"--ptxas-options=-v"}});
  Graph g = graph_from_json(testing::matmul_graph("matmul_square"));
  for (Precision precision : {Precision::tf32x3, Precision::tf32}) {
    Schedule s;
    s.kernels[kernel_groups(g, true)[0].key] = {.strategy = Strategy::mma, .block = kMmaThreads, .vec = 4,
                                                .precision = precision};
    Plan p = lower(g, s);
    CompileResult r = c.compile(p.kernels.at(0).source, p.kernels.at(0).name);
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_NE(r.log.find("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"), std::string::npos)
        << to_string(precision) << ":\n" << r.log;
  }
}

TEST(MatmulMma, TheEpilogueIsAppliedInTheStoreAndTheBiasIsAnArgument) {
  Graph g = graph_from_json(testing::matmul_graph("linear_bias_relu"));
  Schedule s;
  s.kernels[kernel_groups(g, true)[0].key] = {.strategy = Strategy::mma, .precision = Precision::tf32x3};
  Plan p = lower(g, s);
  ASSERT_EQ(p.kernels.size(), 1u) << "bias and ReLU fold into the product's store";
  EXPECT_EQ(p.kernels[0].args.size(), 4u) << "a, b, c and the bias; no workspace";
  EXPECT_NE(p.kernels[0].source.find("v += bias[col]; v = fmaxf(v, 0.f);"), std::string::npos);
}

TEST(MatmulMma, OnlyTensorCorePrecisionsAndFixedParametersAreLegal) {
  KernelGroup mm = kernel_groups(graph_from_json(testing::matmul_graph("matmul_square")), true)[0];
  KernelSchedule ks{.strategy = Strategy::mma, .block = kMmaThreads, .precision = Precision::tf32x3};
  EXPECT_NO_THROW(check_schedule(mm, ks));
  for (auto bad : {KernelSchedule{.strategy = Strategy::mma, .precision = Precision::fp32},
                   KernelSchedule{.strategy = Strategy::mma, .block = 128, .precision = Precision::tf32x3},
                   KernelSchedule{.strategy = Strategy::mma, .precision = Precision::tf32, .algo = 2},
                   KernelSchedule{.strategy = Strategy::mma, .items = 3, .precision = Precision::tf32},
                   KernelSchedule{.strategy = Strategy::mma, .vec = 2, .precision = Precision::tf32},
                   KernelSchedule{.strategy = Strategy::library, .precision = Precision::tf32x3}})
    EXPECT_THROW(check_schedule(mm, bad), UserError) << to_json(bad).dump();
  KernelGroup pw = kernel_groups(graph_from_json(testing::sample_graph("relu")), true)[0];
  EXPECT_THROW(check_schedule(pw, ks), UserError);
  EXPECT_EQ(schedule_from_json(to_json(Schedule{.kernels = {{"mm", ks}}})).kernels.at("mm"), ks);
  EXPECT_EQ(precision_from_string("tf32x3"), Precision::tf32x3);
}

}  // namespace
}  // namespace kforge
