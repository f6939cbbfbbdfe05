#include <gtest/gtest.h>

#include <filesystem>

#include "common/scratch_path.h"
#include "common/channels_last_graphs.h"
#include "common/conv_graphs.h"
#include "common/sample_graphs.h"
#include "codegen/lower.h"
#include "search/database.h"
#include "search/proposer.h"
#include "search/starved_schedules.h"

namespace kforge {
namespace {

TEST(MeasurementDB, RecordsAndFindsTheFastestCorrect) {
  std::string path = testing::scratch_path("kforge-test.db");
  std::filesystem::remove(path);
  {
    MeasurementDB db(path);
    Measurement wrong{"t", "h", "{\"a\":1}", "H200"};
    wrong.median_ms = 0.1;  // fast but wrong: never the best
    db.record(wrong);
    Measurement slow{"t", "h", "{\"a\":2}", "H200"};
    slow.relaxed = slow.compiled = true;
    slow.median_ms = 2.0;
    db.record(slow);
    Measurement fast = slow;
    fast.schedule_json = "{\"a\":3}";
    fast.median_ms = 1.0;
    db.record(fast);
    EXPECT_EQ(db.count("h"), 3);
  }
  MeasurementDB reopened(path);  // survives a restart
  auto best = reopened.best("h", "H200");
  ASSERT_TRUE(best);
  EXPECT_EQ(best->schedule_json, "{\"a\":3}");
  EXPECT_FALSE(reopened.best("h", "other GPU"));
  EXPECT_FALSE(reopened.best("other", "H200"));
}

TEST(MeasurementDB, UnwritablePathIsAClearError) {
  EXPECT_THROW(MeasurementDB("/nonexistent-dir/x/y.db"), std::exception);
}

TEST(Proposer, NeverRepeatsAndStaysLegal) {
  for (auto& sample : testing::sample_graphs()) {
    Graph g = graph_from_json(sample.graph);
    ScheduleProposer p(g, 7);
    EXPECT_TRUE(p.mark(Schedule{}));
    EXPECT_FALSE(p.mark(Schedule{}));
    std::set<std::string> seen;
    Schedule best;
    for (int i = 0; i < 20; ++i) {
      auto s = p.next(best);
      if (!s) break;
      EXPECT_TRUE(seen.insert(to_json(*s).dump()).second);
      for (auto& grp : kernel_groups(g, s->fuse_rows)) EXPECT_NO_THROW(schedule_for(*s, grp)) << sample.name;
    }
  }
}

// Where the graph has a channels-last form (codegen/channels_last.h) the local search also flips it, keeping the
// kernels' schedules legal there (a convolution's layout nhwc); every proposal lowers.
TEST(Proposer, FlipsTheChannelsLastFormAndItsProposalsLower) {
  GraphAnalysis a(graph_from_json(testing::conv_graph("conv2d_bias_relu")));
  ASSERT_TRUE(a.has_channels_last_form());
  ScheduleProposer p(a, 3);
  int flipped = 0;
  for (Schedule best : {Schedule{}, Schedule{.channels_last = true}}) {
    for (int i = 0; i < 60; ++i) {
      auto s = p.next(best);
      if (!s) break;
      flipped += s->channels_last != best.channels_last;
      EXPECT_NO_THROW(lower(a, *s)) << to_json(*s).dump();
    }
  }
  EXPECT_GT(flipped, 0);
  // A graph without a convolution never gets the form.
  ScheduleProposer none(graph_from_json(testing::sample_graph("softmax")), 3);
  for (int i = 0; i < 60; ++i)
    if (auto s = none.next(Schedule{})) EXPECT_FALSE(s->channels_last);
}

// LayerNorm over rows of 24480 (bench/level1/26's shape): one thread per row, or few blocks, cannot
// keep HBM busy; the local search leaves such schedules out while the group has others.
TEST(Proposer, LocalSearchSkipsSchedulesThatStarveTheMemory) {
  Graph g = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [16384, 24480]}], "nodes": [
      {"name": "y", "op": "layer_norm", "args": ["x", "", ""], "attrs": {"normalized_ndim": 1, "eps": 1e-5}}],
      "outputs": ["y"]})"));
  KernelGroup row = kernel_groups(g, true).front();
  EXPECT_TRUE(starves_memory(row, {Strategy::thread, 128, 1, 1, 1}, GpuFacts{}));  // 16384 threads
  EXPECT_FALSE(starves_memory(row, default_schedule(row), GpuFacts{}));
  // sum over the middle dim of [640, 4093, 384] (bench/level1/17's shape): rows are strided for a warp or a
  // block, and 128 chunks of 32 elements leave most of a 1024-thread block idle; tile and thread read coalesced.
  Graph middle = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [640, 4093, 384]}],
      "nodes": [{"name": "y", "op": "sum", "args": ["x"], "attrs": {"dims": [1], "keepdim": false}}], "outputs": ["y"]})"));
  KernelGroup mid = kernel_groups(middle, true).front();
  EXPECT_TRUE(starves_memory(mid, {Strategy::warp, 512, 1, 4, 1}, GpuFacts{}));
  EXPECT_TRUE(starves_memory(mid, {Strategy::split, 1024, 1, 1, 128}, GpuFacts{}));
  EXPECT_TRUE(starves_memory(mid, {Strategy::split, 256, 1, 1, 8}, GpuFacts{}));  // chunks of 512: long enough, still strided
  EXPECT_FALSE(starves_memory(mid, {Strategy::thread, 128, 4, 4, 1}, GpuFacts{}));  // a thread per four columns
  EXPECT_FALSE(starves_memory(mid, {Strategy::tile, 64, 1, 4, 1}, GpuFacts{}));
  EXPECT_FALSE(starves_memory(mid, {Strategy::thread, 128, 1, 1, 1}, GpuFacts{}));
  EXPECT_FALSE(starves_memory(mid, default_schedule(mid), GpuFacts{}));
  // a split of rows of 65536 in 32 chunks: 2048 elements a chunk feed a 1024-thread block, 512 vectors of four do not
  Graph rows = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [512, 65536]}],
      "nodes": [{"name": "y", "op": "sum", "args": ["x"], "attrs": {"dims": [1], "keepdim": false}}], "outputs": ["y"]})"));
  KernelGroup long_rows = kernel_groups(rows, true).front();
  EXPECT_FALSE(starves_memory(long_rows, {Strategy::split, 1024, 1, 1, 32}, GpuFacts{}));
  EXPECT_TRUE(starves_memory(long_rows, {Strategy::split, 1024, 4, 1, 32}, GpuFacts{}));
  EXPECT_FALSE(starves_memory(long_rows, {Strategy::split, 256, 4, 1, 32}, GpuFacts{}));
  // cumprod along the middle dim: a block per line reads it strided; a thread per line is coalesced.
  Graph scan = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [256, 1021, 1536]}],
      "nodes": [{"name": "y", "op": "cumprod", "args": ["x"], "attrs": {"dim": 1, "reverse": false}}], "outputs": ["y"]})"));
  KernelGroup line = kernel_groups(scan, true).front();
  EXPECT_TRUE(starves_memory(line, {Strategy::block, 256, 1, 2, 1}, GpuFacts{}));
  EXPECT_FALSE(starves_memory(line, default_schedule(line), GpuFacts{}));
  Graph small = graph_from_json(testing::sample_graph("layer_norm"));  // fits in L2: nothing to starve
  EXPECT_FALSE(starves_memory(kernel_groups(small, true).front(), {Strategy::thread, 64, 1, 1, 1}, GpuFacts{}));

  ScheduleProposer local(g, 3, true), uniform(g, 3, false);
  int starved_local = 0, starved_uniform = 0;
  for (int i = 0; i < 40; ++i) {
    for (auto [p, count] : {std::pair{&local, &starved_local}, std::pair{&uniform, &starved_uniform}}) {
      auto s = p->next(Schedule{});
      if (!s) continue;
      for (auto& grp : kernel_groups(g, s->fuse_rows)) *count += starves_memory(grp, schedule_for(*s, grp), GpuFacts{});
    }
  }
  EXPECT_EQ(starved_local, 0);
  EXPECT_GT(starved_uniform, 0);  // the random baseline still draws from the whole space
}

}  // namespace
}  // namespace kforge

#include "search/features.h"

namespace kforge {
namespace {

TEST(Features, TaskFeaturesCountWhatTheGraphDoes) {
  Graph g = graph_from_json(testing::sample_graph("softmax"));  // [17, 1023]
  TaskFeatures t = task_features(g, GpuInfo{4000, 132});
  EXPECT_EQ(t.reductions, 2);     // max, then sum of exp
  EXPECT_GE(t.transcendental, 1); // exp
  EXPECT_DOUBLE_EQ(t.min_bytes, 2.0 * 17 * 1023 * 4);
  EXPECT_NEAR(t.floor_ms, t.min_bytes / 4e12 * 1e3, 1e-12);
  EXPECT_GT(t.intensity, 0);
}

TEST(Features, PlanFeaturesFollowTheSchedule) {
  Graph g = graph_from_json(testing::sample_graph("softmax"));
  PlanFeatures fused = plan_features(g, Schedule{});
  EXPECT_EQ(fused.kernels, 1);
  EXPECT_EQ(fused.row_groups, 1);
  EXPECT_EQ(fused.cached_rows, 1);  // two passes (max and sum of exp online, then the outputs) over a row that fits
  EXPECT_EQ(fused.passes, 2);
  Schedule unfused;
  unfused.fuse_rows = false;
  PlanFeatures split = plan_features(g, unfused);
  EXPECT_EQ(split.fuse_rows, 0);
  EXPECT_EQ(split.kernels, 3);
  auto v = feature_vector(task_features(g, {}), fused);
  EXPECT_EQ(v.size(), feature_names().size());
  EXPECT_NE(v, feature_vector(task_features(g, {}), split));
}

// The plan's form is a feature: a cost model tells the channels-last forms' plans from the default form's.
TEST(Features, ThePlansFormIsAFeature) {
  GraphAnalysis a(graph_from_json(testing::channels_last_graphs::chain()));
  Schedule last, half;
  last.channels_last = half.channels_last = half.half_activations = true;
  const PlanFeatures plain = plan_features(a, Schedule{}), cl = plan_features(a, last), fp16 = plan_features(a, half);
  EXPECT_EQ(plain.channels_last + plain.half_activations, 0);
  EXPECT_EQ(cl.channels_last, 1);
  EXPECT_EQ(cl.half_activations, 0);
  EXPECT_EQ(fp16.half_activations, 1);
  const TaskFeatures t = task_features(a.graph(), {});
  EXPECT_NE(feature_vector(t, cl), feature_vector(t, fp16));
}

}  // namespace
}  // namespace kforge
