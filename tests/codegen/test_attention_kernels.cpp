// Attention fused into one kernel (codegen/attention_fusion.h, emit_attention.cpp): which graphs fuse and which
// must not, the fused graph's function against the unfused one, the kernel's source compiled for sm_80-90, and its
// arithmetic run on the CPU against the interpreter for every mask and operand form.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "codegen/attention_fusion.h"
#include "codegen/lower.h"
#include "common/attention_graphs.h"
#include "common/cpu_kernel_runner.h"
#include "common/device_tensors.h"
#include "common/kernel_groups.h"
#include "common/random_inputs.h"
#include "ir/decompose.h"
#include "ir/interpreter.h"
#include "runtime/compiler.h"

namespace kforge {
namespace {

using testing::AttentionCase;
using testing::Mask;

int64_t count(const Graph& g, const std::string& op) {
  return std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op == op; });
}

const KernelGroup& attention_group(const GraphAnalysis& a) { return testing::group_of_kind(a, GroupKind::attention); }

TEST(AttentionKernels, ProductsAroundASoftmaxBecomeOneKernelComputingTheSameFunction) {
  for (const AttentionCase& c : testing::small_attention_cases()) {
    const Graph g = graph_from_json(testing::attention_graph(c));
    const Graph prim = primitive_graph(g);
    EXPECT_EQ(count(prim, "attention"), 1) << c.name;
    EXPECT_EQ(count(prim, "attention_scores"), 1) << c.name;
    EXPECT_EQ(count(prim, "matmul") + count(prim, "reduce") + count(prim, "exp"), 0) << c.name;
    std::mt19937_64 rng(3);
    const auto inputs = testing::random_values(g, g.inputs, rng);
    const HostTensor fused = interpret(prim, inputs, {})[0], unfused = interpret(decompose(g), inputs, {})[0];
    EXPECT_EQ(testing::mismatches(fused.data, unfused, 1e-12), "") << c.name;
    GraphAnalysis analysis(g);
    const std::vector<KernelGroup>& groups = analysis.groups(true);
    ASSERT_EQ(groups.size(), 1u) << c.name;  // views of the inputs and the masks' arithmetic are read in place
    const AttentionDims& d = *attention_group(analysis).attention;
    // On tensor cores by default: a half-precision task's 16-bit values as stored, else the split tf32x3.
    const KernelSchedule ks = default_schedule(attention_group(analysis));
    EXPECT_EQ(ks.strategy, Strategy::mma) << c.name;
    EXPECT_EQ(ks.precision, c.dtype == "f16" ? Precision::fp16 : c.dtype == "bf16" ? Precision::bf16 : Precision::tf32x3) << c.name;
    EXPECT_EQ(d.rows, c.rows);
    EXPECT_EQ(d.keys, c.keys);
    EXPECT_EQ(d.head, c.head);
    EXPECT_EQ(d.value_head, c.value_head);
    const Plan p = lower(analysis, Schedule{});
    ASSERT_EQ(p.kernels.size(), 1u) << c.name;
    const bool triangle = c.mask == Mask::causal || c.mask == Mask::filled_tril;
    EXPECT_EQ(p.kernels[0].source.find("keys beyond row + " + std::to_string(c.diagonal) + " skipped") != std::string::npos,
              triangle)
        << c.name;
  }
}

TEST(AttentionKernels, ScoresOrWeightsReadElsewhereAreNotFused) {
  // The weights returned too (nn.MultiheadAttention's need_weights), the scores returned too, a softmax over
  // another dim, a head dim no schedule holds: the products and the softmax stay as they are.
  nlohmann::json weights_out = testing::attention_graph({"w"});
  weights_out["outputs"].push_back("weights");
  nlohmann::json scores_out = testing::attention_graph({"s"});
  scores_out["outputs"].push_back("scaled");
  nlohmann::json other_dim = testing::attention_graph({"d"});
  for (auto& n : other_dim["nodes"])
    if (n["op"] == "softmax") n["attrs"]["dim"] = 2;
  AttentionCase wide{"wide"};
  wide.head = 1024;
  for (const nlohmann::json& j : {weights_out, scores_out, other_dim, testing::attention_graph(wide)}) {
    const Graph prim = primitive_graph(graph_from_json(j));
    EXPECT_EQ(count(prim, "attention"), 0);
    EXPECT_EQ(count(prim, "matmul"), 2);
  }
  EXPECT_FALSE(attention_fits(1024, 64, TargetFacts{}));
  EXPECT_TRUE(attention_fits(256, 256, TargetFacts{}));
}

TEST(AttentionKernels, TheScheduleSpaceFitsSharedMemoryAndRegisters) {
  for (const AttentionCase& c : testing::gpu_attention_cases()) {
    GraphAnalysis analysis(graph_from_json(testing::attention_graph(c)));
    const KernelGroup& grp = attention_group(analysis);
    const std::vector<KernelSchedule> space = schedule_space(grp);
    ASSERT_FALSE(space.empty()) << c.name;
    EXPECT_TRUE(is_legal(grp, default_schedule(grp))) << c.name;
    for (const KernelSchedule& ks : space) {
      const AttentionTile t = attention_tile(grp, ks);
      EXPECT_LE(t.smem_bytes(), kMaxRowCache) << c.name;
      EXPECT_EQ(t.blocks, grp.attention->heads * ((c.rows + t.rows - 1) / t.rows)) << c.name;
    }
  }
}

TEST(AttentionKernels, SplitTilesStageBothPartsOnlyWhereTheSmKeepsItsBlocks) {
  // tf32x3: a 64-dim head's both parts would take an 8-warp block's shared memory from 105 to 176 KB (two blocks an
  // SM to one): split as read; a 128-dim head's blocks are one an SM either way: both parts staged.
  for (auto [head, split_as_read] : {std::pair{64, true}, std::pair{128, false}}) {
    GraphAnalysis analysis(graph_from_json(testing::attention_graph({"h", {2}, 256, 256, head, head})));
    const KernelGroup& grp = attention_group(analysis);
    const AttentionTile t = attention_tile(grp, {Strategy::mma, 256, 1, 1, 1, RowCache::none, Precision::tf32x3});
    EXPECT_EQ(t.split_as_read, split_as_read) << head;
    EXPECT_EQ(t.parts, split_as_read ? 1 : 2) << head;
    EXPECT_LE(t.smem_bytes(), kMaxRowCache) << head;
    EXPECT_FALSE(attention_tile(grp, {Strategy::mma, 256, 1, 1, 1, RowCache::none, Precision::tf32}).split_as_read) << head;
  }
}

TEST(AttentionKernels, CompileForAmpereAdaAndHopper) {
  // Every schedule of every case for Hopper; Ampere and Ada (no sm_90 features used) the defaults of the larger.
  for (const char* arch : {"sm_80", "sm_89", "sm_90"}) {
    Compiler compiler({arch, default_cache_dir(), {}});
    const bool hopper = std::string(arch) == "sm_90";
    for (const AttentionCase& c : testing::gpu_attention_cases()) {
      if (!hopper && c.rows < 200) continue;
      GraphAnalysis analysis(graph_from_json(testing::attention_graph(c)));
      const KernelGroup& grp = attention_group(analysis);
      for (const KernelSchedule& ks : hopper ? schedule_space(grp) : std::vector<KernelSchedule>{default_schedule(grp)}) {
        Schedule s;
        s.kernels[grp.key] = ks;
        for (const PlanKernel& k : lower(analysis, s).kernels) {
          CompileResult r = compiler.compile(k.source, k.name);
          EXPECT_TRUE(r.ok) << arch << " " << c.name << ":\n" << r.log;
        }
      }
    }
  }
}

TEST(AttentionKernels, MatchTheInterpreterOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int ran = 0;
  for (const AttentionCase& c : testing::small_attention_cases()) {
    const Graph g = graph_from_json(testing::attention_graph(c));
    std::mt19937_64 rng(7);
    auto inputs = testing::random_values(g, g.inputs, rng);
    // bf16 at the verifier's 4x scale (scores 16x larger, sharper softmaxes): where the probabilities' 8 bits alone
    // put results past the tolerance (kf_split_half2). Exact: a power of two.
    if (c.dtype == "bf16")
      for (HostTensor& t : inputs)
        for (double& x : t.data) x *= 4;
    const HostTensor want = interpret(decompose(g), inputs, {})[0];
    GraphAnalysis analysis(g);
    const KernelGroup& grp = attention_group(analysis);
    // Every schedule on two cases (CUDA cores with query tiles of 32, 64 and 128 rows; tensor cores with 4 and 8
    // warps, tf32 and tf32x3), the default (tensor cores) and the CUDA cores' kernel on the others.
    std::vector<KernelSchedule> schedules = {default_schedule(grp), {Strategy::block, kAttentionThreads, 1, 4, 1}};
    if (c.name == "causal_below_diagonal" || c.name == "additive_mask") schedules = schedule_space(grp);
    // A half-precision task's: every 16-bit schedule (4 or 8 warps, one or two 16-row tiles a warp).
    if (c.dtype != "f32")
      for (const KernelSchedule& ks : schedule_space(grp))
        if (is_half(ks.precision) && ks != default_schedule(grp)) schedules.push_back(ks);
    for (const KernelSchedule& ks : schedules) {
      Schedule s;
      s.kernels[grp.key] = ks;
      const Plan p = lower(analysis, s);
      testing::HostPlanBuffers h = testing::plan_buffers_on_cpu(p, inputs, {});
      for (const PlanKernel& k : p.kernels) {
        std::vector<float*> args;
        for (int b : k.args) args.push_back(h.data[size_t(b)].data());
        testing::run_on_cpu(k, args, k.grid);
      }
      // TF32 rounds the operands to 11 significant bits; the split (tf32x3) and the CUDA cores keep fp32's. A 16-bit
      // result may round the other way from the reference's (an ulp: 2^-10 in f16, 2^-7 in bf16), and fp16's products
      // round the probabilities to the dtype (bf16's keep two parts of them: one part alone misses 5e-3 here).
      const double tol = c.dtype == "bf16" ? 5e-3 : c.dtype == "f16" ? 3e-3 : ks.precision == Precision::tf32 ? 5e-3 : 2e-5;
      EXPECT_EQ(testing::mismatches(testing::output_values(p, h), want, tol), "") << c.name << " " << to_json(ks).dump();
      ++ran;
    }
  }
  EXPECT_GE(ran, 30);
}

}  // namespace
}  // namespace kforge
