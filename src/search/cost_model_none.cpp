// Builds without XGBoost: the cost model commands say what is missing.
#include "ir/error.h"
#include "search/cost_model.h"

namespace kforge {

namespace {
[[noreturn]] void missing() { throw UserError("this kforge was built without XGBoost (install libxgboost-dev and rebuild)"); }
}  // namespace

bool boosted_cost_model_available() { return false; }
std::unique_ptr<CostModel> train_boosted_cost_model(const std::vector<std::vector<double>>&, const std::vector<double>&,
                                                    const TrainOptions&, const std::vector<unsigned>&) { missing(); }
std::unique_ptr<CostModel> load_boosted_cost_model(const std::string&) { missing(); }
void save_cost_model(const CostModel&, const std::string&) { missing(); }

}  // namespace kforge
