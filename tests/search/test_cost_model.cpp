#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/scratch_path.h"
#include "codegen/lower.h"
#include "common/sample_graphs.h"
#include "common/synthetic_times.h"
#include "ir/error.h"
#include "search/cost_model.h"
#include "search/features.h"
#include "search/proposer.h"

namespace kforge {
namespace {

TEST(CostModel, RankCorrelation) {
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(rank_correlation({1, 2, 3, 4}, {1, 1, 2, 2}), 0.894, 1e-3);  // ties share ranks
}

TEST(CostModel, LearnsToRankSchedulesItHasNotSeen) {
  if (!boosted_cost_model_available()) GTEST_SKIP() << "built without XGBoost";
  std::mt19937_64 rng(3);
  std::vector<std::vector<double>> train_rows, test_rows;
  std::vector<double> train_y, test_y;
  std::vector<size_t> test_task;
  auto samples = testing::sample_graphs();
  for (size_t i = 0; i < samples.size(); ++i) {
    Graph g = graph_from_json(samples[i].graph);
    TaskFeatures t = task_features(g, {});
    ScheduleProposer proposer(g, i);
    std::vector<Schedule> schedules = {Schedule{}};
    for (int k = 0; k < 12; ++k)
      if (auto s = proposer.next(Schedule{})) schedules.push_back(*s);
    bool held_out = i % 4 == 0;  // whole tasks held out: transfer, not memorisation
    for (auto& s : schedules) {
      PlanFeatures p = plan_features(g, s);
      (held_out ? test_rows : train_rows).push_back(feature_vector(t, p));
      (held_out ? test_y : train_y).push_back(testing::synthetic_log_ms(t, p, rng));
      if (held_out) test_task.push_back(i);
    }
  }
  auto model = train_boosted_cost_model(train_rows, train_y, {});
  auto pred = model->predict(test_rows);
  EXPECT_GT(rank_correlation(pred, test_y), 0.8);
  // What search needs: the order of one unseen task's candidates.
  double sum = 0;
  int tasks = 0;
  for (size_t i = 0; i < test_task.size();) {
    size_t e = i;
    std::vector<double> p, y;
    while (e < test_task.size() && test_task[e] == test_task[i]) p.push_back(pred[e]), y.push_back(test_y[e]), ++e;
    sum += rank_correlation(p, y);
    ++tasks;
    i = e;
  }
  EXPECT_GT(sum / tasks, 0.7) << "mean within-task rank correlation over " << tasks << " held-out tasks";

  std::string path = testing::scratch_path("kforge-cost-model.json");
  save_cost_model(*model, path);
  auto loaded = load_boosted_cost_model(path);
  EXPECT_EQ(loaded->predict(test_rows), pred);
  EXPECT_THROW(model->predict({{1.0, 2.0}}), UserError);  // wrong layout is refused, not misread
}

}  // namespace
}  // namespace kforge
