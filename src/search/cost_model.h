// Cost models rank candidate plans before any GPU time is spent (Halide's CostModel.h, Ansor's learned
// model). The interface takes feature rows (features.h) and returns scores, lower for faster plans: a
// predicted log(native milliseconds) for the regression objective, a negated ranking score for the pairwise
// one (comparable within one task only, which is the model's one use). The one implementation is
// gradient-boosted trees through XGBoost's C API, trained on the measurement database
// (cost_model_training.h). A saved model records its objective and the feature names it was trained on and
// refuses rows of another layout.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kforge {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::vector<double> predict(const std::vector<std::vector<double>>& rows) const = 0;
};

// Regression fits log ms across tasks, so most of what it learns is the tasks' sizes; pairwise ranking
// (XGBoost's rank:pairwise, rows grouped by task) learns only the order within a task. Both were cross-validated
// 4-fold by task on 6756 training measurements.
enum class CostObjective { regression, pairwise };

// Depth 4 at rate 0.05 cross-validated best of depths 2-8 and rates 0.05-0.1 on those 6756 measurements.
struct TrainOptions {
  CostObjective objective = CostObjective::pairwise;
  int rounds = 300;
  int max_depth = 4;
  double learning_rate = 0.05;
  uint64_t seed = 1;
};

// Whether this build has XGBoost (Debian: libxgboost-dev); without it training and loading throw UserError.
bool boosted_cost_model_available();

// `groups`: the sizes of consecutive runs of rows from one task, in order (the pairwise objective compares
// rows within a run only; regression ignores them).
std::unique_ptr<CostModel> train_boosted_cost_model(const std::vector<std::vector<double>>& rows,
                                                    const std::vector<double>& log_ms, const TrainOptions& opts,
                                                    const std::vector<unsigned>& groups = {});
std::unique_ptr<CostModel> load_boosted_cost_model(const std::string& path);
void save_cost_model(const CostModel& model, const std::string& path);

// The order search measures candidates in from their scores: the best-scored first, then every other one a
// uniform draw among those not yet taken (seeded). The model is trusted, not blindly: cross-validated on 6756
// training measurements its top 16 were worse than 16 random plans on a few tasks it ranked confidently wrong,
// as the learned policy was (learned_policy.h, kProposalExploration).
std::vector<size_t> search_order(const std::vector<double>& scores, uint64_t seed);

// Spearman rank correlation of two equally long series (1 = same order): how well a model ranks.
double rank_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace kforge
