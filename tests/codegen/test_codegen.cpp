#include <gtest/gtest.h>

#include <set>

#include "common/scratch_path.h"
#include "codegen/lower.h"
#include "codegen/partition.h"
#include "ir/decompose.h"
#include "common/representative_schedules.h"
#include "common/sample_graphs.h"
#include "ir/error.h"
#include "runtime/compiler.h"
#include "runtime/cublaslt_api.h"

namespace kforge {
namespace {

// Grids are sized in the target's SMs: a whole-tensor sum splits into about eight blocks an SM.
TEST(Codegen, SplitReductionsAreSizedInTheTargetsSms) {
  nlohmann::json j = {{"inputs", {{{"name", "x"}, {"dtype", "f32"}, {"shape", {512, 512}}}}}, {"params", nlohmann::json::array()},
                      {"nodes", {{{"name", "s"}, {"op", "sum"}, {"args", {"x"}}, {"attrs", {{"dims", {0, 1}}, {"keepdim", false}}}}}},
                      {"outputs", {"s"}}};
  Graph g = graph_from_json(j);
  GraphAnalysis hopper(g), small(g, {.sm = 89, .sms = 16});
  KernelSchedule big = default_schedule(hopper.groups(true).at(0)), few = default_schedule(small.groups(true).at(0));
  ASSERT_EQ(big.strategy, Strategy::split);
  ASSERT_EQ(few.strategy, Strategy::split);
  EXPECT_EQ(big.chunks, 512);      // 8 x 132 + 1, at most 512
  EXPECT_EQ(few.chunks, 8 * 16 + 1);
}

int kernels_for(const nlohmann::json& graph, bool fuse) {
  Schedule s;
  s.fuse_rows = fuse;
  return int(lower(graph_from_json(graph), s).kernels.size());
}

nlohmann::json sample(const std::string& name) {
  for (auto& s : testing::sample_graphs())
    if (s.name == name) return s.graph;
  throw std::runtime_error("no sample " + name);
}

TEST(Partition, SoftmaxAndNormsFuseIntoOneKernel) {
  EXPECT_EQ(kernels_for(sample("softmax"), true), 1);
  EXPECT_EQ(kernels_for(sample("layer_norm"), true), 1);
  EXPECT_EQ(kernels_for(sample("rms_norm"), true), 1);
  EXPECT_EQ(kernels_for(sample("group_norm"), true), 1);
  // Without row fusion every statistic pass is its own kernel and the output one more: softmax's sum reads
  // its max; LayerNorm's mean and variance are siblings.
  EXPECT_EQ(kernels_for(sample("softmax"), false), 3);
  EXPECT_EQ(kernels_for(sample("layer_norm"), false), 2);
}

// The row group holding statistic node `name` of the primitive graph of `sample_name`.
KernelGroup row_group_of(const std::string& sample_name, const std::string& name, bool fuse) {
  Graph g = decompose(graph_from_json(sample(sample_name)));
  Partition p = partition(g, fuse);
  for (auto& k : p.groups)
    for (int s : k.stats)
      if (g.at(s).name.find(name) != std::string::npos) return k;
  throw std::runtime_error("no statistic named like " + name);
}

TEST(Partition, SiblingStatisticsShareOneWalkFusedOrNot) {
  // cosine_similarity: dot product and the two squared norms read the rows, not each other.
  for (bool fuse : {true, false}) {
    KernelGroup k = row_group_of("cosine_similarity", "reduce", fuse);
    EXPECT_EQ(k.stats.size(), 3u) << fuse;
    EXPECT_EQ(stat_walks(k), 1) << fuse;
  }
  EXPECT_EQ(kernels_for(sample("cosine_similarity"), false), 2);  // the three statistics, then the division
}

TEST(Partition, DependentStatisticsTakeLaterWalks) {
  // sum(x - max(x)) reads the max: a second walk, then none for the outputs (a row output only).
  nlohmann::json j = {{"inputs", {{{"name", "x"}, {"shape", {4, 100}}}}},
                      {"nodes", {{{"name", "m"}, {"op", "amax"}, {"args", {"x"}}, {"attrs", {{"dims", {1}}, {"keepdim", true}}}},
                                 {{"name", "d"}, {"op", "sub"}, {"args", {"x", "m"}}},
                                 {{"name", "s"}, {"op", "sum"}, {"args", {"d"}}, {"attrs", {{"dims", {1}}, {"keepdim", false}}}}}},
                      {"outputs", {"s"}}};
  auto groups = kernel_groups(graph_from_json(j), true);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].stat_pass, (std::vector<int>{0, 1}));
  EXPECT_EQ(groups[0].online_max, (std::vector<int>{-1, -1}));
  EXPECT_EQ(row_walks(groups[0]), 2);
  EXPECT_FALSE(has_online_stat(groups[0]));
}

TEST(Partition, SoftmaxSumsRunOnlineWithTheirMax) {
  // softmax, log-softmax, cross-entropy: sum(exp(x - max(x))) shares the max's walk (online softmax).
  for (const char* name : {"softmax", "log_softmax", "cross_entropy"}) {
    Graph prim = primitive_graph(graph_from_json(sample(name)));
    for (auto& grp : partition(prim, true).groups) {
      auto is_max = [&](int s) { return prim.at(s).attr_s("kind") == "max"; };
      if (grp.kind != GroupKind::row || std::none_of(grp.stats.begin(), grp.stats.end(), is_max)) continue;  // e.g. the mean over the batch
      ASSERT_EQ(grp.stats.size(), grp.online_max.size()) << name;
      for (size_t i = 0; i < grp.stats.size(); ++i) {
        if (prim.at(grp.stats[i]).attr_s("kind") != "sum") continue;
        ASSERT_GE(grp.online_max[i], 0) << name;
        EXPECT_EQ(prim.at(grp.online_max[i]).attr_s("kind"), "max") << name;
        auto at = std::find(grp.stats.begin(), grp.stats.end(), grp.online_max[i]) - grp.stats.begin();
        EXPECT_EQ(grp.stat_pass[i], grp.stat_pass[size_t(at)]) << name;
      }
      EXPECT_TRUE(has_online_stat(grp)) << name;
      EXPECT_EQ(stat_walks(grp), 1) << name;
      // Split's chunks would need the pair's combine in stage 2: refused by name.
      EXPECT_THROW(check_schedule(grp, {.strategy = Strategy::split, .block = 256, .chunks = 8}), UserError) << name;
    }
  }
}

// Where the row is cached on chip, the kernel walks the cache once more instead (without_online_stats): each
// online sum takes the walk after its max's, and no statistic is online any more.
TEST(Partition, CachedRowsTakeTheirSoftmaxSumsApart) {
  for (const char* name : {"softmax", "log_softmax", "cross_entropy"}) {
    Graph prim = primitive_graph(graph_from_json(sample(name)));
    for (auto& grp : partition(prim, true).groups) {
      if (!has_online_stat(grp)) continue;
      KernelGroup apart = without_online_stats(grp);
      EXPECT_FALSE(has_online_stat(apart)) << name;
      EXPECT_EQ(stat_walks(apart), stat_walks(grp) + 1) << name;
      for (size_t i = 0; i < grp.stats.size(); ++i) {
        if (grp.online_max[i] < 0) continue;
        auto max_at = size_t(std::find(grp.stats.begin(), grp.stats.end(), grp.online_max[i]) - grp.stats.begin());
        EXPECT_EQ(apart.stat_pass[i], apart.stat_pass[max_at] + 1) << name;
      }
    }
  }
}

TEST(Partition, ScanEpiloguesAndProloguesFuse) {
  EXPECT_EQ(kernels_for(sample("exclusive_cumsum"), true), 1);
  EXPECT_EQ(kernels_for(sample("masked_cumsum"), true), 1);
  EXPECT_EQ(kernels_for(sample("flip_cumsum_flip"), true), 1);  // a reverse scan, no flip copies
}

TEST(Partition, ElementwiseChainsAreOneKernel) {
  EXPECT_EQ(kernels_for(sample("chain_broadcast"), true), 1);
  EXPECT_EQ(kernels_for(sample("permute_copy"), true), 1);
}

// A recurrence unrolled in time, as the importer writes an LSTM: the state c_t = 0.5 c_(t-1) + m_t (m_t a product of
// the previous output) is read by the output h_t = tanh(c_t), a product's operand, and by c_(t+1). Recomputed, c_t
// would reach back through every step; stored where its expression reads more than a few stored values (by the
// kernel computing h_t, no launch of its own), no kernel reads more than that many, however many the steps.
nlohmann::json unrolled_recurrence(int steps) {
  nlohmann::json nodes = nlohmann::json::array();
  nodes.push_back({{"name", "half"}, {"op", "const"}, {"attrs", {{"value", 0.5}}}});
  std::string h = "x", c;
  for (int t = 0; t < steps; ++t) {
    const std::string m = "m" + std::to_string(t), ct = "c" + std::to_string(t), ht = "h" + std::to_string(t);
    nodes.push_back({{"name", m}, {"op", "matmul"}, {"args", {h, "w"}}});
    if (c.empty()) {
      nodes.push_back({{"name", ct}, {"op", "mul"}, {"args", {m, "half"}}});
    } else {
      nodes.push_back({{"name", ct + "_decay"}, {"op", "mul"}, {"args", {c, "half"}}});
      nodes.push_back({{"name", ct}, {"op", "add"}, {"args", {ct + "_decay", m}}});
    }
    nodes.push_back({{"name", ht}, {"op", "tanh"}, {"args", {ct}}});
    h = ht, c = ct;
  }
  return {{"inputs", {{{"name", "x"}, {"shape", {4, 8}}}}}, {"params", {{{"name", "w"}, {"shape", {8, 8}}}}},
          {"nodes", nodes}, {"outputs", {h}}};
}

TEST(Partition, AnUnrolledRecurrenceStoresItsStateInsteadOfRecomputingEveryStep) {
  for (int steps : {6, 40}) {
    Graph g = graph_from_json(unrolled_recurrence(steps));
    Plan p = lower(g, {});
    size_t widest = 0, generated = 0;
    for (const PlanKernel& k : p.kernels)
      if (k.kind == StepKind::nvrtc) widest = std::max(widest, k.args.size()), ++generated;
    // at most 8 stored values read for the state, 1 for the step's product, the state and the output written
    EXPECT_LE(widest, 11u) << steps << " steps: a kernel reads every earlier step";
    EXPECT_EQ(generated, size_t(steps)) << "one kernel a step: a stored state is written by the kernel of its output";
  }
}

// A value read by a gather from another pointwise kernel's output, at positions the index computes, stays in a
// kernel of its own: joined, it would read elements other threads of the same kernel are still writing.
TEST(Partition, AGatherOfAKernelsOutputDoesNotJoinIt) {
  Graph g = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [4, 8]},
      {"name": "idx", "shape": [4, 8], "dtype": "i64"}], "nodes": [
      {"name": "two", "op": "const", "attrs": {"value": 2.0}},
      {"name": "m", "op": "mul", "args": ["x", "two"]},
      {"name": "picked", "op": "gather", "args": ["m", "idx"], "attrs": {"dim": 1}},
      {"name": "y", "op": "add", "args": ["m", "picked"]}], "outputs": ["y", "m"]})"));
  EXPECT_EQ(kernel_groups(g, true).size(), 2u);
}

TEST(Schedule, IllegalSchedulesNameKernelAndField) {
  Graph g = graph_from_json(sample("softmax"));
  auto groups = kernel_groups(g, true);
  ASSERT_EQ(groups.size(), 1u);
  KernelSchedule ks;
  ks.strategy = Strategy::split;
  ks.chunks = 8;
  try {
    check_schedule(groups[0], ks);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("schedule of kernel 'y.reduce0': strategy split needs one walk over the row"), std::string::npos) << e.what();
  }
  ks = {Strategy::block, 100};
  EXPECT_THROW(check_schedule(groups[0], ks), UserError);
}

TEST(Schedule, NoThreadWalksAHugeRowAlone) {
  // Regression (device run 1, 47_kl_div_loss): a thread per row over a 100M-element loss took minutes.
  nlohmann::json big = {{"inputs", {{{"name", "x"}, {"shape", {1024, 1024}}}}},
                        {"nodes", {{{"name", "y"}, {"op", "sum"}, {"args", {"x"}}, {"attrs", {{"dims", nlohmann::json::array()}, {"keepdim", false}}}}}},
                        {"outputs", {"y"}}};
  auto groups = kernel_groups(graph_from_json(big), true);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_THROW(check_schedule(groups[0], {Strategy::thread, 128}), UserError);
  for (auto& ks : schedule_space(groups[0])) EXPECT_NE(ks.strategy, Strategy::thread);
  EXPECT_EQ(default_schedule(groups[0]).strategy, Strategy::split);
}

TEST(Schedule, DefaultsPickTheLayoutAwareStrategies) {
  auto only_group = [](const std::string& name) {
    auto groups = kernel_groups(graph_from_json(sample(name)), true);
    EXPECT_EQ(groups.size(), 1u) << name;
    return groups.at(0);
  };
  // Reducing a middle dim keeps the innermost one: rows side by side, a lane each.
  EXPECT_EQ(default_schedule(only_group("sum_middle")).strategy, Strategy::tile);
  EXPECT_EQ(default_schedule(only_group("argmin")).strategy, Strategy::tile);
  // Softmax makes three passes over a row that fits in shared memory: cache it.
  KernelSchedule soft = default_schedule(only_group("softmax"));
  EXPECT_EQ(soft.cache_row, RowCache::shared);
  Plan p = lower(graph_from_json(sample("softmax")), Schedule{});
  EXPECT_NE(p.kernels.at(0).source.find("extern __shared__ float kf_row[]"), std::string::npos);
  EXPECT_EQ(p.kernels.at(0).smem, 1023 * 4);
  // A single pass has nothing to reuse; the tile strategy needs the innermost dim kept.
  KernelSchedule one_pass{Strategy::block, 256};
  one_pass.cache_row = RowCache::shared;
  EXPECT_THROW(check_schedule(only_group("sum_last"), one_pass), UserError);
  EXPECT_THROW(check_schedule(only_group("sum_last"), {Strategy::tile, 256}), UserError);
  // Scans: a block walks a line along the contiguous axis, short or long (a thread per line would stride by its
  // length); lines along a strided axis go a thread each; lines of a few elements too.
  for (auto [name, want] : {std::pair{"cumsum_last", Strategy::block}, {"exclusive_cumsum", Strategy::block},
                            {"cumsum_reverse_middle", Strategy::thread}, {"flip_cumsum_flip", Strategy::thread}}) {
    KernelGroup g = only_group(name);
    KernelSchedule ks = default_schedule(g);
    EXPECT_EQ(ks.strategy, want) << name;
    EXPECT_NO_THROW(check_schedule(g, ks)) << name;
    if (want == Strategy::block) {
      EXPECT_GE(ks.block * ks.items, std::min<int64_t>(row_length(g), 2048)) << name;
    }
  }
}

// A measurement records every group's schedule (explicit_schedule): the same plan as the schedule it was given,
// so that the record keeps naming it after the hand-written defaults change.
TEST(Schedule, ExplicitSchedulesLowerToTheSamePlan) {
  for (auto& sample : testing::sample_graphs()) {
    Graph g = graph_from_json(sample.graph);
    for (bool fuse : {true, false}) {
      Schedule given;
      given.fuse_rows = fuse;
      Schedule full = explicit_schedule(g, given);
      EXPECT_EQ(full.kernels.size(), kernel_groups(g, fuse).size()) << sample.name;
      Plan a = lower(g, given), b = lower(g, full);
      ASSERT_EQ(a.kernels.size(), b.kernels.size()) << sample.name;
      for (size_t i = 0; i < a.kernels.size(); ++i) EXPECT_EQ(a.kernels[i].source, b.kernels[i].source) << sample.name;
    }
  }
}

// A strided scan line too long for one thread (kMaxSerial) gets a block by default, not an illegal schedule.
TEST(Schedule, LongStridedScansDefaultToABlock) {
  nlohmann::json j = {{"inputs", {{{"name", "x"}, {"shape", {70000, 4}}, {"dtype", "f32"}}}},
                      {"nodes", {{{"name", "y"}, {"op", "cumsum"}, {"args", {"x"}}, {"attrs", {{"dim", 0}, {"reverse", false}}}}}},
                      {"outputs", {"y"}}};
  Graph g = graph_from_json(j);
  KernelGroup scan = kernel_groups(g, true).at(0);
  EXPECT_EQ(default_schedule(scan).strategy, Strategy::block);
  EXPECT_NO_THROW(lower(g, Schedule{}));
}

// The one kernel of a one-group sample under `ks`, checked to compile for sm_90.
PlanKernel one_kernel_under(const Graph& g, const KernelSchedule& ks) {
  auto groups = kernel_groups(g, true);
  EXPECT_EQ(groups.size(), 1u);
  EXPECT_NO_THROW(check_schedule(groups.at(0), ks));
  Schedule s;
  s.kernels[groups.at(0).key] = ks;
  Plan p = lower(g, s);
  EXPECT_EQ(p.kernels.size(), 1u);
  CompileResult c = Compiler({"sm_90", "", {}}).compile(p.kernels.at(0).source, p.kernels.at(0).name);
  EXPECT_TRUE(c.ok) << c.log;
  return p.kernels.at(0);
}

TEST(Schedule, RowsCachedInRegistersUseNoSharedMemory) {
  // softmax over rows of 1023: two walks; a 256-thread block keeps 4 elements of the row per thread.
  Graph g = graph_from_json(sample("softmax"));
  auto groups = kernel_groups(g, true);
  PlanKernel k = one_kernel_under(g, {Strategy::block, 256, 1, 1, 1, RowCache::registers});
  EXPECT_EQ(k.smem, 0);
  EXPECT_NE(k.source.find("float kf_reg0[4];"), std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("kf_row"), std::string::npos);
  EXPECT_EQ(k.schedule["cache_row"], "registers");
  // Each walk reads the thread index anew (kf_tid: no 64-bit addresses kept across the reduction); 4 floats a
  // thread limit nothing (RowCachesTellPtxasTheirBlocksPerSm has rows that do). The row on chip, softmax walks
  // it three times (max, sum of exp, output): no online sum (without_online_stats).
  size_t walks = 0;
  for (size_t at = k.source.find("kf_t = kf_tid()"); at != std::string::npos; at = k.source.find("kf_t = kf_tid()", at + 1)) ++walks;
  EXPECT_EQ(walks, 3u) << k.source;
  EXPECT_EQ(k.source.find("KfOnlineSumExp::add"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("__launch_bounds__(256)"), std::string::npos) << k.source;
  // A warp's lanes would hold a quarter of the row each; 32-thread-wide slots of a long row do not fit.
  EXPECT_THROW(check_schedule(groups[0], {Strategy::warp, 256, 1, 1, 1, RowCache::registers}), UserError);
  EXPECT_THROW(check_schedule(groups[0], {Strategy::block, 8, 1, 1, 1, RowCache::registers}), UserError);
  // The search space offers it.
  bool offered = false;
  for (auto& ks : schedule_space(groups[0])) offered = offered || ks.cache_row == RowCache::registers;
  EXPECT_TRUE(offered);
}

TEST(Schedule, BulkRowsCopyTheNextRowWhileTheBlockWorksOnThisOne) {
  // softmax over rows of 1023: two buffers of 1023 floats shifted by up to 3 (a row start's offset past 16 bytes).
  Graph g = graph_from_json(sample("softmax"));
  auto groups = kernel_groups(g, true);
  PlanKernel k = one_kernel_under(g, {Strategy::block, 256, 1, 1, 1, RowCache::bulk});  // compiles for sm_90
  EXPECT_EQ(bulk_row_floats(groups[0]), 1028);
  EXPECT_EQ(k.smem, 2 * 1028 * 4);
  EXPECT_TRUE(k.persistent);  // the launch takes the blocks the GPU holds, each walking many rows
  for (const char* step : {"kf_bulk_copy(", "kf_bulk_wait(&kf_bar[kf_stage], (unsigned)(kf_it >> 1) & 1u)",
                           "k + gridDim.x < ", "__align__(16) float kf_row[]"})
    EXPECT_NE(k.source.find(step), std::string::npos) << step << "\n" << k.source;
  EXPECT_EQ(k.source.find("KfOnlineSumExp::add"), std::string::npos) << k.source;  // three walks over the cache
  EXPECT_TRUE(Plan::from_json(lower(g, [&] {
                Schedule s;
                s.kernels[groups[0].key] = {Strategy::block, 256, 1, 1, 1, RowCache::bulk};
                return s;
              }()).to_json()).kernels.at(0).persistent);
  // Block strategy, rows contiguous and long enough, two buffers within 227 KB.
  EXPECT_THROW(check_schedule(groups[0], {Strategy::warp, 256, 1, 1, 1, RowCache::bulk}), UserError);
  Graph too_wide = graph_from_json(testing::unary_graph("softmax", {2, 30000}, {{"dim", 1}}));
  EXPECT_THROW(check_schedule(kernel_groups(too_wide, true).at(0), {Strategy::block, 256, 1, 1, 1, RowCache::bulk}), UserError);
  Graph narrow = graph_from_json(testing::unary_graph("softmax", {64, 40}, {{"dim", 1}}));
  EXPECT_THROW(check_schedule(kernel_groups(narrow, true).at(0), {Strategy::block, 256, 1, 1, 1, RowCache::bulk}), UserError);
  Graph channels = graph_from_json(sample("log_softmax"));  // rows across the innermost dim
  EXPECT_THROW(check_schedule(kernel_groups(channels, true).at(0), {Strategy::block, 256, 1, 1, 1, RowCache::bulk}), UserError);
  Graph wide = graph_from_json(testing::unary_graph("softmax", {2, 20000}, {{"dim", 1}}));
  PlanKernel w = one_kernel_under(wide, {Strategy::block, 512, 1, 1, 1, RowCache::bulk});
  EXPECT_NE(w.source.find("__launch_bounds__(512, 1)"), std::string::npos);  // 160 KB: one block an SM
  // A row walked once reuses nothing, but its next row streams in while the block sums this one.
  Graph mean = graph_from_json(testing::unary_graph("mean", {8, 4093}, {{"dims", {1}}, {"keepdim", true}}));
  KernelGroup once = kernel_groups(mean, true).at(0);
  ASSERT_EQ(row_walks(once), 1);
  EXPECT_THROW(check_schedule(once, {Strategy::block, 128, 1, 1, 1, RowCache::shared}), UserError);
  EXPECT_TRUE(one_kernel_under(mean, {Strategy::block, 128, 1, 1, 1, RowCache::bulk}).persistent);
}

// Half-precision rows copied the same way as their 16-bit patterns: a row's start up to 7 elements past a 16-byte
// boundary, so slots of R + 14 rounded to 8 and up to 8 edge elements a side; a vector walk reads its patterns
// from the slot. Where f32 rows are read too, the f32 ones are cached (one element size a kernel).
TEST(Schedule, BulkRowsOfHalfPrecisionPatternsAreCopiedTheSameWay) {
  auto half_softmax = [](const char* extra_input) {
    return graph_from_json(nlohmann::json::parse(std::string(R"({"inputs": [{"name": "x", "shape": [6, 1023], "dtype": "bf16"})") +
      extra_input + R"(], "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
      {"name": "s", "op": "softmax", "args": ["xf"], "attrs": {"dim": 1}},
      {"name": "y", "op": "cast", "args": ["s"], "attrs": {"dtype": "bf16"}}], "outputs": ["y"]})"));
  };
  PlanKernel k = one_kernel_under(half_softmax(""), {Strategy::block, 256, 1, 1, 1, RowCache::bulk});  // compiles for sm_90
  EXPECT_EQ(k.smem, 2 * 1032 * 2);
  EXPECT_TRUE(k.persistent);
  for (const char* step : {"unsigned short* const kf_cur = reinterpret_cast<unsigned short*>(kf_row)", " & 7);",
                           "(hi - lo) * 2)", "threadIdx.x < 16", "kf_from_bf16(kf_cur["})
    EXPECT_NE(k.source.find(step), std::string::npos) << step << "\n" << k.source;
  nlohmann::json ln = nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [5, 8, 20], "dtype": "f16"}],
    "params": [{"name": "w", "shape": [8, 20]}, {"name": "b", "shape": [8, 20]}],
    "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
              {"name": "n", "op": "layer_norm", "args": ["xf", "w", "b"], "attrs": {"normalized_ndim": 2, "eps": 1e-5}},
              {"name": "y", "op": "cast", "args": ["n"], "attrs": {"dtype": "f16"}}], "outputs": ["y"]})");
  PlanKernel v = one_kernel_under(graph_from_json(ln), {Strategy::block, 128, 4, 2, 1, RowCache::bulk});
  EXPECT_NE(v.source.find("*reinterpret_cast<const uint2*>(kf_cur + "), std::string::npos) << v.source;
  // an f32 input beside the half one: the f32 rows are the cached ones
  Graph mixed = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [6, 1023], "dtype": "bf16"},
      {"name": "z", "shape": [6, 1023]}], "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
      {"name": "a", "op": "add", "args": ["xf", "z"]}, {"name": "s", "op": "softmax", "args": ["a"], "attrs": {"dim": 1}}],
      "outputs": ["s"]})"));
  PlanKernel m = one_kernel_under(mixed, {Strategy::block, 256, 1, 1, 1, RowCache::bulk});
  EXPECT_EQ(m.smem, 2 * 1028 * 4);
  EXPECT_NE(m.source.find("float* const kf_cur = kf_row"), std::string::npos) << m.source;
}

// A split's chunks are whole vectors where its walk reads 4 neighbouring elements a step: floats as float4, 16-bit
// patterns as uint2 (a mean of squared differences over one row, as a loss is).
TEST(Schedule, SplitChunksWalkWholeVectors) {
  for (const char* dtype : {"f32", "f16"}) {
    const bool half = std::string(dtype) != "f32";
    nlohmann::json j = nlohmann::json::parse(R"({"inputs": [{"name": "a", "shape": [4096, 100]}, {"name": "b", "shape": [4096, 100]}],
      "nodes": [{"name": "d", "op": "sub", "args": ["af", "bf"]}, {"name": "q", "op": "mul", "args": ["d", "d"]},
      {"name": "m", "op": "mean", "args": ["q"], "attrs": {"dims": [0, 1], "keepdim": false}}], "outputs": ["m"]})");
    if (half) {  // the inputs stored in f16, read through casts
      for (auto& in : j["inputs"]) in["dtype"] = dtype;
      j["nodes"].insert(j["nodes"].begin(), {{{"name", "af"}, {"op", "cast"}, {"args", {"a"}}, {"attrs", {{"dtype", "f32"}}}},
                                             {{"name", "bf"}, {"op", "cast"}, {"args", {"b"}}, {"attrs", {{"dtype", "f32"}}}}});
    } else {
      j["nodes"][0]["args"] = {"a", "b"};
    }
    Graph g = graph_from_json(j);
    std::vector<PlanKernel> ks;
    for (auto& grp : kernel_groups(g, true)) {
      if (grp.kind != GroupKind::row) continue;
      Schedule s;
      s.kernels[grp.key] = {Strategy::split, 256, 4, 1, 7};  // 409600 / 7 rounded up to whole vectors
      EXPECT_NO_THROW(check_schedule(grp, s.kernels[grp.key]));
      for (auto& k : lower(g, s).kernels) {
        CompileResult c = Compiler({"sm_90", "", {}}).compile(k.source, k.name);
        EXPECT_TRUE(c.ok) << c.log;
        ks.push_back(k);
      }
    }
    ASSERT_FALSE(ks.empty());
    const std::string& partial = ks.at(0).source;
    const std::string read = half ? "const uint2 kf_h" : "const float4 kf_v";
    for (std::string step : {read, std::string("kf_rv < min((chunk + 1) * 14629LL, 102400LL)")})
      EXPECT_NE(partial.find(step), std::string::npos) << dtype << ": " << step << "\n" << partial;
  }
}

TEST(Schedule, BlockRowsWalkWholeVectorsWhereRowsAreWholeVectors) {
  // layer_norm over rows of 8 * 20: x, the weight and the bias read 16 bytes at a time, y written so; the
  // weight indexed by the row's own r (no division into coordinates).
  nlohmann::json j = sample("layer_norm");
  j["inputs"][0]["shape"] = {5, 8, 20};
  j["params"][0]["shape"] = j["params"][1]["shape"] = {8, 20};
  Graph g = graph_from_json(j);
  KernelGroup grp = kernel_groups(g, true).at(0);
  for (RowCache cache : {RowCache::none, RowCache::bulk}) {
    PlanKernel k = one_kernel_under(g, {Strategy::block, 128, 4, 2, 1, cache});  // compiles for sm_90
    for (const char* step : {"kf_rv < 40LL", "const float4 kf_v", "const float4 kf_w", "make_float4(", "* kf_w"})
      EXPECT_NE(k.source.find(step), std::string::npos) << step << "\n" << k.source;
  }
  PlanKernel scalar = one_kernel_under(g, {Strategy::block, 128, 1, 1, 1});
  EXPECT_NE(scalar.source.find("[r]);"), std::string::npos) << scalar.source;  // weight at r
  EXPECT_THROW(check_schedule(grp, {Strategy::block, 128, 4, 1, 1, RowCache::shared}), UserError);
  EXPECT_THROW(check_schedule(grp, {Strategy::block, 128, 3, 1, 1}), UserError);
  Graph odd = graph_from_json(sample("layer_norm"));  // rows of 7 * 33
  EXPECT_THROW(check_schedule(kernel_groups(odd, true).at(0), {Strategy::block, 128, 4, 1, 1}), UserError);
}

// The same walk over half-precision rows: x and y move 4 16-bit patterns a load and a store (8 bytes), the
// lanes read and packed low bits first; the f32 weight and bias as before.
TEST(Schedule, BlockRowsWalkWholeVectorsOfHalfPrecisionPatterns) {
  for (const char* dtype : {"f16", "bf16"}) {
    Graph g = graph_from_json(nlohmann::json::parse(std::string(R"({"inputs": [{"name": "x", "shape": [5, 8, 20], "dtype": ")") +
      dtype + R"("}], "params": [{"name": "w", "shape": [8, 20]}, {"name": "b", "shape": [8, 20]}],
      "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
                {"name": "n", "op": "layer_norm", "args": ["xf", "w", "b"], "attrs": {"normalized_ndim": 2, "eps": 1e-5}},
                {"name": "y", "op": "cast", "args": ["n"], "attrs": {"dtype": ")" + dtype + R"("}}], "outputs": ["y"]})"));
    for (int vec : {2, 4}) {
      PlanKernel k = one_kernel_under(g, {Strategy::block, 128, vec, 2, 1});  // compiles for sm_90
      const std::string vt = vec == 4 ? "uint2" : "unsigned int";
      for (std::string step : {"const " + vt + " kf_h", "*reinterpret_cast<" + vt + "*>(", std::string(" >> 16))"),
                               std::string(" << 16))"), std::string("const float")})
        EXPECT_NE(k.source.find(step), std::string::npos) << dtype << " vec " << vec << ": " << step << "\n" << k.source;
      EXPECT_EQ(k.source.find("[kf_lin + "), std::string::npos) << k.source;
    }
  }
}

TEST(Schedule, TilesCacheTheirThirtyTwoRowsInSharedMemory) {
  // log_softmax over the middle dim of [3, 19, 11]: rows side by side (tile), three walks over each.
  Graph g = graph_from_json(sample("log_softmax"));
  auto groups = kernel_groups(g, true);
  PlanKernel k = one_kernel_under(g, {Strategy::tile, 128, 1, 1, 1, RowCache::shared});
  EXPECT_EQ(k.smem, 19 * 32 * 4);  // one buffer (x) of 32 rows of 19
  EXPECT_NE(k.source.find("kf_row[0LL + r * 32 + lane] = "), std::string::npos) << k.source;
  // Or in registers: 4 warps share each row of 19, 5 slots a thread.
  PlanKernel r = one_kernel_under(g, {Strategy::tile, 128, 1, 1, 1, RowCache::registers});
  EXPECT_EQ(r.smem, 0);
  EXPECT_NE(r.source.find("float kf_reg0[5];"), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("kf_reg0[kf_j] = "), std::string::npos) << r.source;
  EXPECT_EQ(r.source.find("KfOnlineSumExp::add"), std::string::npos) << r.source;  // the row on chip: three walks
  Graph long_rows = graph_from_json(testing::unary_graph("log_softmax", {2, 3000, 40}, {{"dim", 1}}));
  EXPECT_THROW(check_schedule(kernel_groups(long_rows, true).at(0), {Strategy::tile, 1024, 1, 1, 1, RowCache::registers}),
               UserError);  // 94 slots a thread
}

TEST(Schedule, RowCachesTellPtxasTheirBlocksPerSm) {
  // softmax over rows of 20000: an 80 KB shared-memory row leaves room for 2 blocks an SM (full occupancy would
  // be 8 of 256 threads), 40 floats a thread in registers for 2 of 512 threads; a row of 1023 limits nothing
  // (ptxas's own full-occupancy budget stands).
  Graph wide = graph_from_json(testing::unary_graph("softmax", {2, 20000}, {{"dim", 1}}));
  auto bounds = [](const PlanKernel& k) {
    size_t at = k.source.find("__launch_bounds__(");
    return at == std::string::npos ? std::string() : k.source.substr(at, k.source.find(')', at) + 1 - at);
  };
  EXPECT_EQ(bounds(one_kernel_under(wide, {Strategy::block, 256, 1, 1, 1, RowCache::shared})), "__launch_bounds__(256, 2)");
  EXPECT_EQ(bounds(one_kernel_under(wide, {Strategy::block, 512, 1, 1, 1, RowCache::registers})), "__launch_bounds__(512, 2)");
  EXPECT_EQ(bounds(one_kernel_under(wide, {Strategy::block, 1024, 1, 1, 1, RowCache::registers})), "__launch_bounds__(1024, 1)");
  Graph g = graph_from_json(sample("softmax"));
  EXPECT_EQ(bounds(one_kernel_under(g, {Strategy::block, 256, 1, 1, 1, RowCache::shared})), "__launch_bounds__(256)");
  EXPECT_EQ(bounds(one_kernel_under(g, {Strategy::block, 256, 1, 1, 1})), "__launch_bounds__(256)");
  // A 32-thread tile: never more than sm_90's 32 blocks an SM (ptxas ignores a larger count, with a warning).
  Graph channels = graph_from_json(sample("log_softmax"));
  EXPECT_EQ(bounds(one_kernel_under(channels, {Strategy::tile, 32, 1, 1, 1, RowCache::shared})), "__launch_bounds__(32)");
}

TEST(Schedule, VectorThreadsNeedRowsSideBySideAndOneWalk) {
  auto group_of = [](const nlohmann::json& graph) { return kernel_groups(graph_from_json(graph), true).at(0); };
  auto reduce = [](const std::string& op, std::vector<int64_t> shape, int64_t dim) {
    return testing::unary_graph(op, std::move(shape), {{"dim", dim}, {"keepdim", false}});
  };
  const KernelSchedule four{Strategy::thread, 128, 4, 1, 1};
  EXPECT_NO_THROW(check_schedule(group_of(reduce("argmin", {2, 9, 8}, 1)), four));
  EXPECT_NO_THROW(check_schedule(group_of(reduce("argmin", {2, 9, 6}, 1)), {Strategy::thread, 128, 2, 1, 1}));
  EXPECT_THROW(check_schedule(group_of(reduce("argmin", {2, 9, 6}, 1)), four), UserError);   // 6 columns: not by 4
  EXPECT_THROW(check_schedule(group_of(reduce("argmin", {2, 9, 8}, 2)), four), UserError);   // rows contiguous
  EXPECT_THROW(check_schedule(group_of(reduce("argmin", {2, 9, 8}, 1)), {Strategy::tile, 128, 4, 1, 1}), UserError);
  EXPECT_THROW(check_schedule(group_of(reduce("log_softmax", {2, 9, 8}, 1)), four), UserError);  // two walks
  // Reduced dims listed out of order (a hand-written graph; the importer sorts them): the innermost is reduced.
  nlohmann::json unsorted = testing::unary_graph("sum", {3, 5, 8}, {{"dims", {2, 0}}, {"keepdim", false}});
  EXPECT_FALSE(keeps_innermost(group_of(unsorted)));
  EXPECT_THROW(check_schedule(group_of(unsorted), four), UserError);
  // One load of four floats a step, four accumulators.
  PlanKernel k = one_kernel_under(graph_from_json(reduce("argmin", {2, 9, 8}, 1)), four);
  EXPECT_NE(k.source.find("*reinterpret_cast<const float4*>(b0 + lin)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("acc1_3"), std::string::npos) << k.source;
  EXPECT_EQ(k.grid, 1);  // 4 threads' work in one block
}

TEST(Schedule, CacheRowReadsTheOldBooleans) {
  nlohmann::json old = {{"kernels", {{"k", {{"strategy", "block"}, {"block", 256}, {"cache_row", true}}}}}};
  EXPECT_EQ(schedule_from_json(old).kernels.at("k").cache_row, RowCache::shared);
  old["kernels"]["k"]["cache_row"] = false;
  EXPECT_EQ(schedule_from_json(old).kernels.at("k").cache_row, RowCache::none);
  old["kernels"]["k"]["cache_row"] = "sideways";
  EXPECT_THROW(schedule_from_json(old), UserError);
}

TEST(Schedule, JsonRoundTrip) {
  Schedule s;
  s.fuse_rows = false;
  s.kernels["k"] = {Strategy::warp, 128, 1, 2, 1};
  s.kernels["r"] = {Strategy::block, 512, 1, 1, 1, RowCache::registers};
  EXPECT_EQ(schedule_from_json(to_json(s)), s);
  Plan p = lower(graph_from_json(sample("softmax")), Schedule{});
  Plan back = Plan::from_json(p.to_json());
  EXPECT_EQ(back.kernels.size(), p.kernels.size());
  EXPECT_EQ(back.kernels[0].source, p.kernels[0].source);
  EXPECT_EQ(back.min_bytes(), p.min_bytes());
}

TEST(Compiler, ReportsErrorsWithTheLogAndCachesSuccesses) {
  std::string dir = testing::scratch_path("kforge-cache-test");
  Compiler c({"sm_90", dir, {}});
  CompileResult bad = c.compile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("undefined_thing"), std::string::npos) << bad.log;
  std::string src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }";
  CompileResult first = c.compile(src, "good"), second = c.compile(src, "good");
  EXPECT_TRUE(first.ok);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(first.cubin, second.cubin);
}

// cuBLASLt is opened when a plan first needs it (runtime/cublaslt_api.h), not linked: every entry point
// resolves from the toolkit's library, with no GPU needed to look them up.
TEST(CublasLt, LoadsOnDemandWithEveryEntryPoint) {
  const CublasLt& lt = cublaslt();
  EXPECT_NE(lt.cublasLtMatmul, nullptr);
  EXPECT_NE(lt.cublasLtMatmulAlgoGetHeuristic, nullptr);
  EXPECT_STREQ(lt.cublasLtGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
}

}  // namespace
}  // namespace kforge
