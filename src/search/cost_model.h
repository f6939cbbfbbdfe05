// Cost models rank candidate plans before any GPU time is spent (Halide's CostModel.h, Ansor's learned
// model). The interface takes feature rows (features.h) and predicts log(native milliseconds); the one
// implementation is gradient-boosted trees through XGBoost's C API, trained on the measurement database.
// A saved model records the feature names it was trained on and refuses rows of another layout.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace kforge {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::vector<double> predict(const std::vector<std::vector<double>>& rows) const = 0;
};

struct TrainOptions {
  int rounds = 300;
  int max_depth = 6;
  double learning_rate = 0.1;
  uint64_t seed = 1;
};

// Whether this build has XGBoost (Debian: libxgboost-dev); without it training and loading throw UserError.
bool boosted_cost_model_available();

std::unique_ptr<CostModel> train_boosted_cost_model(const std::vector<std::vector<double>>& rows,
                                                    const std::vector<double>& log_ms, const TrainOptions& opts);
std::unique_ptr<CostModel> load_boosted_cost_model(const std::string& path);
void save_cost_model(const CostModel& model, const std::string& path);

// Spearman rank correlation of two equally long series (1 = same order): how well a model ranks.
double rank_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace kforge
