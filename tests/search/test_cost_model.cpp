#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "common/scratch_path.h"
#include "codegen/lower.h"
#include "common/sample_graphs.h"
#include "common/synthetic_times.h"
#include "ir/error.h"
#include "search/cost_model.h"
#include "search/cost_model_training.h"
#include "search/features.h"
#include "search/proposer.h"

namespace kforge {
namespace {

TEST(CostModel, RankCorrelation) {
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(rank_correlation({1, 2, 3, 4}, {1, 1, 2, 2}), 0.894, 1e-3);  // ties share ranks
}

// Synthetic measurements (synthetic_times.h) of every sample graph: a task per graph, the default and 12
// proposals each.
std::vector<CostSample> synthetic_samples() {
  std::mt19937_64 rng(3);
  std::vector<CostSample> out;
  auto samples = testing::sample_graphs();
  for (size_t i = 0; i < samples.size(); ++i) {
    Graph g = graph_from_json(samples[i].graph);
    TaskFeatures t = task_features(g, {});
    ScheduleProposer proposer(g, i);
    std::vector<Schedule> schedules = {Schedule{}};
    for (int k = 0; k < 12; ++k)
      if (auto s = proposer.next(Schedule{})) schedules.push_back(*s);
    for (auto& s : schedules) {
      PlanFeatures p = plan_features(g, s);
      out.push_back({samples[i].name, feature_vector(t, p), testing::synthetic_log_ms(t, p, rng)});
    }
  }
  return out;
}

TEST(CostModel, LearnsToRankSchedulesOfTasksItHasNotSeen) {
  if (!boosted_cost_model_available()) GTEST_SKIP() << "built without XGBoost";
  std::vector<CostSample> samples = synthetic_samples();
  for (auto objective : {CostObjective::pairwise, CostObjective::regression}) {
    CostModelScore cv = cross_validate(samples, 4, {.objective = objective}, 4);
    EXPECT_GT(cv.tasks, 20);
    // What search needs: the order of one unseen task's candidates.
    EXPECT_GT(cv.rank_correlation, 0.6) << "objective " << int(objective);
    EXPECT_GT(cv.top_k_tasks, 0);
    EXPECT_GE(cv.top_k_fraction, cv.random_k_fraction) << "objective " << int(objective);
  }
  EXPECT_THROW(cross_validate(std::vector<CostSample>(samples.begin(), samples.begin() + 13), 4, {}), UserError);

  // Saved and loaded, a pairwise model gives the same scores, still lower for faster plans.
  auto model = train_cost_model(samples, {});
  std::vector<std::vector<double>> rows;
  for (auto& s : samples) rows.push_back(s.features);
  auto pred = model->predict(rows);
  std::string path = testing::scratch_path("kforge-cost-model.json");
  save_cost_model(*model, path);
  auto loaded = load_boosted_cost_model(path);
  EXPECT_EQ(loaded->predict(rows), pred);
  std::vector<double> y;
  for (auto& s : samples) y.push_back(s.log_ms);
  EXPECT_GT(rank_correlation(pred, y), 0.0);  // a sign flip would make this strongly negative
  EXPECT_THROW(model->predict({{1.0, 2.0}}), UserError);  // wrong layout is refused, not misread
}

// Files from before pairwise models (version 1: kind "xgboost", no objective) load as regressions; files of a
// newer format, or whose kind and objective disagree, are refused.
TEST(CostModel, ReadsVersionOneFilesAndRefusesWhatItCannotRead) {
  if (!boosted_cost_model_available()) GTEST_SKIP() << "built without XGBoost";
  std::vector<CostSample> samples = synthetic_samples();
  std::vector<std::vector<double>> rows;
  for (auto& s : samples) rows.push_back(s.features);
  auto regression = train_cost_model(samples, {.objective = CostObjective::regression});
  std::string path = testing::scratch_path("kforge-cost-model-v1.json");
  save_cost_model(*regression, path);
  auto rewrite = [&](auto change) {
    nlohmann::json meta = nlohmann::json::parse(std::ifstream(path));
    change(meta);
    std::ofstream(path) << meta.dump();
  };
  rewrite([](nlohmann::json& m) { m.erase("objective"), m.erase("xgboost"), m["version"] = 1; });
  EXPECT_EQ(load_boosted_cost_model(path)->predict(rows), regression->predict(rows));
  rewrite([](nlohmann::json& m) { m["objective"] = "rank:pairwise"; });
  EXPECT_THROW(load_boosted_cost_model(path), UserError);
  rewrite([](nlohmann::json& m) { m.erase("objective"), m["version"] = 3; });
  EXPECT_THROW(load_boosted_cost_model(path), UserError);
}

TEST(CostModel, PairwiseTrainingNeedsTheTaskGroups) {
  if (!boosted_cost_model_available()) GTEST_SKIP() << "built without XGBoost";
  std::vector<CostSample> samples = synthetic_samples();
  std::vector<std::vector<double>> rows = {samples[0].features, samples[1].features};
  EXPECT_THROW(train_boosted_cost_model(rows, {0.0, 1.0}, {}, {1}), UserError);
  EXPECT_NO_THROW(train_boosted_cost_model(rows, {0.0, 1.0}, {.objective = CostObjective::regression}));
}

TEST(CostModel, SearchOrderTakesTheBestScoredFirstAndExploresEveryOtherSlot) {
  std::vector<double> scores = {5, 1, 4, 2, 3, 0, 6, 7};
  std::vector<size_t> order = search_order(scores, 7);
  ASSERT_EQ(order.size(), scores.size());
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), scores.size());  // a permutation
  EXPECT_EQ(order[0], 5u);  // score 0
  for (size_t i = 2; i < order.size(); i += 2)  // the model's slots: the best-scored not taken yet
    for (size_t j = i; j < order.size(); ++j) EXPECT_LE(scores[order[i]], scores[order[j]]) << "slot " << i;
  EXPECT_EQ(search_order(scores, 7), order);
}

TEST(CostModel, ExpectedBestOfARandomDrawMatchesEnumeration) {
  std::vector<double> log_ms = {0.0, 0.5, 0.1, 2.0, 1.0};
  for (int k = 1; k <= 5; ++k) {
    double sum = 0;
    int draws = 0;
    for (int mask = 0; mask < 32; ++mask) {
      if (__builtin_popcount(unsigned(mask)) != k) continue;
      double best = 1e9;
      for (int i = 0; i < 5; ++i)
        if (mask & (1 << i)) best = std::min(best, log_ms[size_t(i)]);
      sum += std::exp(0.0 - best), ++draws;
    }
    EXPECT_NEAR(expected_random_k_fraction(log_ms, k), sum / draws, 1e-12) << "k = " << k;
  }
}

}  // namespace
}  // namespace kforge
