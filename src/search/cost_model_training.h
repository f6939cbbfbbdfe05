// Training and judging the cost model on the measurement database: one sample per distinct plan of a task
// (a graph on one GPU; repeated measurements averaged in log time), grouped by task, since ranking one
// task's candidates is what the model is for.
// Judged by k-fold cross-validation over whole tasks (transfer, not memorisation): the rank correlation of
// predicted and measured times within a task, and what search gets from it, the share of a task's best
// measured speed that the model's top k candidates reach.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "search/cost_model.h"
#include "search/database.h"

namespace kforge {

struct CostSample {
  std::string task;               // graph hash, and @GPU where the database names one
  std::vector<double> features;   // feature_vector(task, plan)
  double log_ms = 0;
};

std::vector<CostSample> cost_samples(const std::vector<MeasurementDB::TrainingRow>& rows);

// Trains on every sample (for the pairwise objective, grouped by task in a stable order).
std::unique_ptr<CostModel> train_cost_model(const std::vector<CostSample>& samples, const TrainOptions& opts);

struct CostModelScore {
  int folds = 0, tasks = 0;      // tasks scored (at least 3 samples)
  double rank_correlation = 0;    // mean over tasks
  int k = 16;
  int top_k_tasks = 0;            // tasks with more than 2k samples, where choosing k is a choice
  double top_k_fraction = 0;      // mean over those of best ms / best ms among the model's top k (1 = found)
  double search_k_fraction = 0;   // the same for the first k of search_order (half of them random draws)
  double random_k_fraction = 0;   // the same for k of the task's samples drawn at random (expected value): chance
};

// Expected best ms / best ms among k of `log_ms` drawn at random without replacement (exact, by order statistics).
double expected_random_k_fraction(std::vector<double> log_ms, int k);

// Each fold's tasks predicted by a model trained on the other folds' tasks. Throws UserError with fewer
// tasks than folds.
CostModelScore cross_validate(const std::vector<CostSample>& samples, int folds, const TrainOptions& opts, int k = 16);

}  // namespace kforge
