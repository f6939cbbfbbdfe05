// What the held-out evaluation measures (search/policy_curves.h), GPU-free: each policy's distinct plans in its
// own order, and refusals that would otherwise give a wrong curve silently.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/lower.h"
#include "common/conv_graphs.h"
#include "common/recurrence_graphs.h"
#include "common/sample_graphs.h"
#include "common/scratch_path.h"
#include "ir/error.h"
#include "search/learned_policy.h"
#include "search/measure.h"
#include "search/policy_curves.h"
#include "search/proposer.h"

namespace kforge {
namespace {

TEST(PolicyCurves, EachPolicyProposesDistinctPlansAndHeuristicIsAPrefixOfTheReference) {
  if (!learned_policy_available()) GTEST_SKIP() << "built without libtorch (KFORGE_WITH_TORCH)";
  std::string dir = testing::scratch_path("kforge-curves-policy");
  std::filesystem::remove_all(dir);
  LearnedPolicy trained({.seed = 9});
  trained.save(checkpoint_path(dir, 1));
  Graph g = graph_from_json(testing::sample_graph("layer_norm"));
  CurveOptions o;
  o.candidates = 12;
  o.reference = 30;
  o.policies = {"trained", "untrained", "random", "heuristic"};
  o.search.checkpoint = dir;
  auto seqs = candidate_sequences(g, o, 4000);
  ASSERT_EQ(seqs.size(), 5u);
  EXPECT_EQ(seqs.back().first, "reference");
  for (auto& [name, seq] : seqs) {
    EXPECT_EQ(int(seq.size()), name == "reference" ? 30 : 12) << name;
    std::set<std::string> keys;
    for (auto& s : seq) keys.insert(plan_key(lower(g, s)));
    EXPECT_EQ(keys.size(), seq.size()) << name << " proposed the same plan twice";
  }
  EXPECT_EQ(seqs[0].second.front(), trained.sample(g, {4000, 132}, true).schedule);  // the greedy plan first
  // heuristic: the hand-written openings, then random proposals, and the first 12 of the reference; random alone
  // starts with a random proposal.
  const auto& random = seqs[2].second;
  const auto& heuristic = seqs[3].second;
  const auto& reference = seqs[4].second;
  auto openings = hand_written_openings(g);
  EXPECT_EQ(std::vector<Schedule>(heuristic.begin(), heuristic.begin() + long(openings.size())), openings);
  EXPECT_EQ(heuristic, std::vector<Schedule>(reference.begin(), reference.begin() + 12));
  EXPECT_NE(random.front(), Schedule{});
  EXPECT_NE(random, heuristic);
}

// A recurrent graph whose layer's weights fit no portable cluster opens with its recurrences unrolled too (third,
// after the default and the batch-split kernel; second where no cluster holds them) and the local search flips
// the form, its edits of either form legal plans; a smaller layer never takes the form.
TEST(Openings, LargeRecurrencesOpenUnrolledAndTheSearchFlipsTheFormLegally) {
  auto unrolled_at = [](const std::vector<Schedule>& openings) {
    for (size_t i = 0; i < openings.size(); ++i)
      if (openings[i].unroll_recurrences) return int(i);
    return -1;
  };
  Graph large = graph_from_json(testing::recurrence_graph({"gru_512", "gru", 4, 64, 512}));
  auto openings = hand_written_openings(large);
  EXPECT_EQ(unrolled_at(openings), 2);
  EXPECT_EQ(unrolled_at(hand_written_openings(graph_from_json(testing::recurrence_graph({"gru_1024", "gru", 2, 4, 1024})))), 1);
  EXPECT_EQ(unrolled_at(hand_written_openings(graph_from_json(testing::sample_graph("softmax")))), -1);
  auto forms_proposed = [](const Graph& g, const std::vector<Schedule>& from) {
    GraphAnalysis analysis(g);
    ScheduleProposer proposer(analysis, 3, true);
    std::set<bool> forms;
    for (const Schedule& start : from)
      for (int i = 0; i < 60; ++i) {
        auto s = proposer.next(start);
        EXPECT_TRUE(s.has_value());
        if (!s) break;
        forms.insert(s->unroll_recurrences);
        EXPECT_NO_THROW(lower(analysis, *s)) << to_json(*s).dump();
      }
    return forms;
  };
  EXPECT_EQ(forms_proposed(large, {openings[1], openings[2]}), (std::set<bool>{false, true}));
  Graph small = graph_from_json(testing::recurrence_graph({"gru", "gru", 3, 4, 40}));
  auto small_openings = hand_written_openings(small);
  EXPECT_EQ(unrolled_at(small_openings), -1);
  EXPECT_EQ(forms_proposed(small, {small_openings[0], small_openings[1]}), (std::set<bool>{false}));
}

// The openings are legal plans; a 2-D depthwise convolution takes kforge's direct kernel in every opening but the
// last, which leaves it to cuDNN; other convolutions never take it.
TEST(Openings, DepthwiseConvolutionsOpenWithTheDirectKernel) {
  for (auto& sample : testing::conv_graphs()) {
    Graph g = graph_from_json(sample.graph);
    auto openings = hand_written_openings(g);
    const bool depthwise = sample.name.find("depthwise") != std::string::npos;
    for (size_t i = 0; i < openings.size(); ++i) {
      const Schedule& s = openings[i];
      EXPECT_NO_THROW(lower(g, s)) << sample.name << " " << to_json(s).dump();
      bool direct = false;
      for (auto& [key, ks] : s.kernels) direct |= ks.strategy == Strategy::tile;
      EXPECT_EQ(direct, depthwise && i + 1 < openings.size()) << sample.name << " opening " << i;
    }
    if (depthwise) EXPECT_EQ(openings.back(), Schedule{}) << sample.name;
  }
}

// A row walked twice (a norm's statistics, then its output) opens with each way of reading it from HBM once;
// a graph without rows does not.
TEST(Openings, RowsWalkedTwiceOpenWithEachRowCache) {
  Graph g = graph_from_json(testing::sample_graph("layer_norm"));
  std::set<std::string> ways;
  for (auto& s : hand_written_openings(g)) {
    EXPECT_NO_THROW(lower(g, s)) << to_json(s).dump();
    for (auto& [key, ks] : s.kernels) ways.insert(to_string(ks.cache_row) + "/" + std::to_string(ks.block));
  }
  EXPECT_EQ(ways, (std::set<std::string>{"bulk/512", "bulk/1024", "shared/512", "shared/1024", "none/1024", "registers/1024",
                                         "registers/512"}));
  for (auto& s : hand_written_openings(graph_from_json(testing::sample_graph("relu")))) EXPECT_TRUE(s.kernels.empty());
  // Rows across the innermost dim (log-softmax over channels): tiles split across clusters with their rows in
  // registers, then tiles that leave their 32 rows in L2.
  Graph channels = graph_from_json(testing::unary_graph("log_softmax", {2, 33, 40}, {{"dim", 1}}));
  std::set<std::string> tiles;
  for (auto& s : hand_written_openings(channels))
    for (auto& [key, ks] : s.kernels)
      tiles.insert(to_string(ks.strategy) + "/" + to_string(ks.cache_row) + "/" + std::to_string(ks.block) + "x" + std::to_string(ks.chunks));
  EXPECT_EQ(tiles, (std::set<std::string>{"tile/registers/512x2", "tile/registers/256x4", "tile/none/1024x1", "tile/none/512x1"}));
  // A reduction over a middle dim walked once: a thread of two neighbouring columns, then of four.
  Graph columns = graph_from_json(testing::unary_graph("argmin", {2, 33, 40}, {{"dim", 1}, {"keepdim", false}}));
  auto openings = hand_written_openings(columns);
  ASSERT_GE(openings.size(), 3u);
  for (int last : {2, 1}) {
    const Schedule& s = openings[openings.size() - size_t(last)];
    const KernelSchedule& vector = s.kernels.begin()->second;
    EXPECT_EQ(vector.strategy, Strategy::thread);
    EXPECT_EQ(vector.vec, last == 2 ? 2 : 4);
    EXPECT_NO_THROW(lower(columns, s));
  }
}

TEST(PolicyCurves, RefusesWhatWouldGiveAMisleadingCurve) {
  Graph g = graph_from_json(testing::sample_graph("softmax"));
  CurveOptions o;
  o.candidates = 4;
  o.reference = 8;
  o.search.checkpoint = testing::scratch_path("kforge-no-such-policy");
  o.policies = {"trained"};
  EXPECT_THROW(candidate_sequences(g, o, 4000), UserError);  // not the local fallback under the name "trained"
  o.policies = {"local"};
  EXPECT_THROW(candidate_sequences(g, o, 4000), UserError);
  o.policies = {"costmodel"};  // without a model: left out, not guessed
  auto seqs = candidate_sequences(g, o, 4000);
  ASSERT_EQ(seqs.size(), 1u);
  EXPECT_EQ(seqs[0].first, "reference");
}

// The openings leave the crossovers their room where they would spend the budget, and come back after them.
TEST(Openings, LeaveRoomForTheCrossovers) {
  EXPECT_EQ(openings_to_measure(20, 12, 0, true), 8u);    // 8 openings, 4 crossovers, then the rest
  EXPECT_EQ(openings_to_measure(12, 12, 8, true), 0u);     // crossovers next
  EXPECT_EQ(openings_to_measure(12, 12, 10, false), 2u);   // after them, what the budget has left
  EXPECT_EQ(openings_to_measure(5, 12, 0, true), 5u);      // few openings: all of them first
  EXPECT_EQ(openings_to_measure(20, 4, 0, true), 4u);      // a small budget is all openings
  EXPECT_EQ(openings_to_measure(20, 12, 0, false), 12u);   // policies without crossovers
  EXPECT_EQ(openings_to_measure(0, 12, 0, true), 0u);
}

}  // namespace
}  // namespace kforge
