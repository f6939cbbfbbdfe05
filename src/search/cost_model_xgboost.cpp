// XGBoost-backed cost model (compiled when CMake finds libxgboost; cost_model_none.cpp otherwise).
#include <xgboost/c_api.h>

#include <fstream>
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

class BoostedCostModel : public CostModel {
 public:
  explicit BoostedCostModel(BoosterHandle b) : booster_(b) {}
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
    return p;
  }
  BoosterHandle handle() const { return booster_; }

 private:
  BoosterHandle booster_;
};

}  // namespace

bool boosted_cost_model_available() { return true; }

std::unique_ptr<CostModel> train_boosted_cost_model(const std::vector<std::vector<double>>& rows,
                                                    const std::vector<double>& log_ms, const TrainOptions& o) {
  if (rows.empty() || rows.size() != log_ms.size()) throw UserError("cost model: no training rows (or rows and targets differ in count)");
  DMatrixHandle m = matrix(rows);
  std::vector<float> y(log_ms.begin(), log_ms.end());
  check(XGDMatrixSetFloatInfo(m, "label", y.data(), y.size()), "labels");
  BoosterHandle b;
  check(XGBoosterCreate(&m, 1, &b), "create");
  auto set = [&](const char* k, const std::string& v) { check(XGBoosterSetParam(b, k, v.c_str()), k); };
  set("objective", "reg:squarederror");
  set("max_depth", std::to_string(o.max_depth));
  set("eta", std::to_string(o.learning_rate));
  set("seed", std::to_string(o.seed));
  set("nthread", "1");  // deterministic and small: training sets are thousands of rows
  for (int i = 0; i < o.rounds; ++i) check(XGBoosterUpdateOneIter(b, i, m), "update");
  XGDMatrixFree(m);
  return std::make_unique<BoostedCostModel>(b);
}

void save_cost_model(const CostModel& model, const std::string& path) {
  auto* bm = dynamic_cast<const BoostedCostModel*>(&model);
  if (!bm) throw UserError("cost model: only boosted models can be saved");
  check(XGBoosterSaveModel(bm->handle(), (path + ".ubj").c_str()), "save");
  std::ofstream(path) << nlohmann::json{{"kind", "xgboost"}, {"version", 1}, {"target", "log_native_ms"},
                                        {"features", feature_names()}, {"model", path + ".ubj"}}.dump(2) << "\n";
}

std::unique_ptr<CostModel> load_boosted_cost_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read cost model " + path);
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded() || meta.value("kind", "") != "xgboost") throw UserError(path + " is not a kforge cost model");
  if (meta["features"].get<std::vector<std::string>>() != feature_names())
    throw UserError("cost model " + path + " was trained on another feature layout; retrain it (kforge train-costmodel)");
  BoosterHandle b;
  check(XGBoosterCreate(nullptr, 0, &b), "create");
  int rc = XGBoosterLoadModel(b, meta["model"].get<std::string>().c_str());
  if (rc != 0) {
    XGBoosterFree(b);
    check(rc, "load");
  }
  return std::make_unique<BoostedCostModel>(b);
}

}  // namespace kforge
