// XGBoost-backed cost model (compiled when CMake finds libxgboost; cost_model_none.cpp otherwise).
#include <xgboost/c_api.h>

#include <fstream>
#include <numeric>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "search/cost_model.h"
#include "search/features.h"

namespace kforge {

namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw UserError(std::string("XGBoost ") + what + " failed: " + XGBGetLastError());
}

DMatrixHandle matrix(const std::vector<std::vector<double>>& rows) {
  size_t cols = feature_names().size();
  std::vector<float> data;
  data.reserve(rows.size() * cols);
  for (auto& r : rows) {
    if (r.size() != cols)
      throw UserError("cost model: a feature row has " + std::to_string(r.size()) + " entries, the model takes " + std::to_string(cols));
    for (double v : r) data.push_back(float(v));
  }
  DMatrixHandle m;
  check(XGDMatrixCreateFromMat(data.data(), rows.size(), cols, NAN, &m), "DMatrix");
  return m;
}

const char* objective_name(CostObjective o) { return o == CostObjective::pairwise ? "rank:pairwise" : "reg:squarederror"; }
// A pairwise model's kind differs from a regression's: a kforge from before pairwise models (which knows
// "xgboost" only) refuses it instead of reading its scores the wrong way round.
const char* kind_name(CostObjective o) { return o == CostObjective::pairwise ? "xgboost-pairwise" : "xgboost"; }

class BoostedCostModel : public CostModel {
 public:
  BoostedCostModel(BoosterHandle b, CostObjective objective) : booster_(b), objective_(objective) {}
  ~BoostedCostModel() override { XGBoosterFree(booster_); }
  std::vector<double> predict(const std::vector<std::vector<double>>& rows) const override {
    if (rows.empty()) return {};
    DMatrixHandle m = matrix(rows);
    bst_ulong n = 0;
    const float* out = nullptr;
    int rc = XGBoosterPredict(booster_, m, 0, 0, 0, &n, &out);
    std::vector<double> p(out, out + (rc == 0 ? n : 0));
    XGDMatrixFree(m);
    check(rc, "predict");
    if (objective_ == CostObjective::pairwise)
      for (double& v : p) v = -v;  // trained on -log ms as relevance: higher was faster
    return p;
  }
  BoosterHandle handle() const { return booster_; }
  CostObjective objective() const { return objective_; }

 private:
  BoosterHandle booster_;
  CostObjective objective_;
};

}  // namespace

bool boosted_cost_model_available() { return true; }

std::unique_ptr<CostModel> train_boosted_cost_model(const std::vector<std::vector<double>>& rows,
                                                    const std::vector<double>& log_ms, const TrainOptions& o,
                                                    const std::vector<unsigned>& groups) {
  if (rows.empty() || rows.size() != log_ms.size()) throw UserError("cost model: no training rows (or rows and targets differ in count)");
  const bool pairwise = o.objective == CostObjective::pairwise;
  if (size_t covered = std::accumulate(groups.begin(), groups.end(), size_t(0)); pairwise && covered != rows.size())
    throw UserError("cost model: the task groups cover " + std::to_string(covered) + " rows of " + std::to_string(rows.size()));
  DMatrixHandle m = matrix(rows);
  std::vector<float> y;
  for (double v : log_ms) y.push_back(float(pairwise ? -v : v));
  check(XGDMatrixSetFloatInfo(m, "label", y.data(), y.size()), "labels");
  if (pairwise) check(XGDMatrixSetUIntInfo(m, "group", groups.data(), groups.size()), "groups");
  BoosterHandle b;
  check(XGBoosterCreate(&m, 1, &b), "create");
  auto set = [&](const char* k, const std::string& v) { check(XGBoosterSetParam(b, k, v.c_str()), k); };
  set("objective", objective_name(o.objective));
  set("max_depth", std::to_string(o.max_depth));
  set("eta", std::to_string(o.learning_rate));
  set("seed", std::to_string(o.seed));
  set("nthread", "1");  // deterministic and small: training sets are thousands of rows
  for (int i = 0; i < o.rounds; ++i) check(XGBoosterUpdateOneIter(b, i, m), "update");
  XGDMatrixFree(m);
  return std::make_unique<BoostedCostModel>(b, o.objective);
}

void save_cost_model(const CostModel& model, const std::string& path) {
  auto* bm = dynamic_cast<const BoostedCostModel*>(&model);
  if (!bm) throw UserError("cost model: only boosted models can be saved");
  check(XGBoosterSaveModel(bm->handle(), (path + ".ubj").c_str()), "save");
  const CostObjective objective = bm->objective();
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  std::ofstream(path) << nlohmann::json{{"kind", kind_name(objective)}, {"version", 2}, {"objective", objective_name(objective)},
                                        {"target", objective == CostObjective::pairwise ? "negated ranking score, within one task"
                                                                                        : "log_native_ms"},
                                        {"xgboost", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch)},
                                        {"features", feature_names()}, {"model", path + ".ubj"}}.dump(2) << "\n";
}

std::unique_ptr<CostModel> load_boosted_cost_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read cost model " + path);
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  const std::string kind = meta.is_discarded() ? "" : meta.value("kind", "");
  if (kind != kind_name(CostObjective::regression) && kind != kind_name(CostObjective::pairwise))
    throw UserError(path + " is not a kforge cost model");
  const CostObjective objective = kind == kind_name(CostObjective::pairwise) ? CostObjective::pairwise : CostObjective::regression;
  if (meta.value("version", 1) > 2) throw UserError("cost model " + path + " is of a newer format (version " + meta["version"].dump() + "); update kforge");
  if (meta["features"].get<std::vector<std::string>>() != feature_names())
    throw UserError("cost model " + path + " was trained on another feature layout; retrain it (kforge train-costmodel)");
  // Version 1 models (before the objective was recorded) are regressions.
  if (const std::string recorded = meta.value("objective", objective_name(CostObjective::regression)); recorded != objective_name(objective))
    throw UserError("cost model " + path + ": kind '" + kind + "' with objective '" + recorded + "'");
  BoosterHandle b;
  check(XGBoosterCreate(nullptr, 0, &b), "create");
  int rc = XGBoosterLoadModel(b, meta["model"].get<std::string>().c_str());
  if (rc != 0) {
    XGBoosterFree(b);
    check(rc, "load");
  }
  return std::make_unique<BoostedCostModel>(b, objective);
}

}  // namespace kforge
