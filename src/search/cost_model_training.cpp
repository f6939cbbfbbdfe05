#include "search/cost_model_training.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "codegen/schedule.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "search/features.h"

namespace kforge {

namespace {

// Stable across machines and runs (std::hash is not): which fold a task falls in.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The samples' indices in task order (stable), and the sizes of the tasks' runs.
std::pair<std::vector<size_t>, std::vector<unsigned>> grouped(const std::vector<CostSample>& samples) {
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return samples[a].task < samples[b].task; });
  std::vector<unsigned> groups;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || samples[order[i]].task != samples[order[i - 1]].task) groups.push_back(0);
    ++groups.back();
  }
  return {order, groups};
}

}  // namespace

double expected_random_k_fraction(std::vector<double> log_ms, int k) {
  std::sort(log_ms.begin(), log_ms.end());
  const size_t n = log_ms.size();
  if (n == 0 || k <= 0) return 0;
  if (size_t(k) >= n) return 1;
  // P(the i-th fastest is the best of the draw) = C(n-1-i, k-1) / C(n, k), as a running product.
  double p = double(k) / double(n), sum = 0;
  for (size_t i = 0; i + size_t(k) <= n; ++i) {
    sum += p * std::exp(log_ms[0] - log_ms[i]);
    if (i + size_t(k) < n) p *= double(n - i - size_t(k)) / double(n - i - 1);
  }
  return sum;
}

std::vector<CostSample> cost_samples(const std::vector<MeasurementDB::TrainingRow>& rows) {
  std::map<std::string, std::pair<std::shared_ptr<const GraphAnalysis>, TaskFeatures>> graphs;
  std::map<std::pair<std::string, std::string>, size_t> seen;  // (task, schedule) -> sample
  std::vector<CostSample> out;
  std::vector<int> repeats;
  for (auto& r : rows) {
    // A task is a graph on one GPU: times from two GPUs are not one ranking.
    const std::string task = r.gpu.empty() ? r.graph_hash : r.graph_hash + "@" + r.gpu;
    auto [at, fresh] = seen.try_emplace({task, r.schedule_json}, out.size());
    if (!fresh) {  // a plan measured again: one sample, its mean log time (search counts distinct plans too)
      CostSample& c = out[at->second];
      int& n = repeats[at->second];
      c.log_ms = (c.log_ms * n + std::log(r.median_ms)) / (n + 1);
      ++n;
      continue;
    }
    auto it = graphs.find(r.graph_hash);
    if (it == graphs.end()) {
      auto analysis = analyze(graph_from_json(nlohmann::json::parse(r.graph_json)));
      it = graphs.emplace(r.graph_hash, std::pair{analysis, task_features(analysis->graph(), {})}).first;
    }
    auto& [analysis, features] = it->second;
    out.push_back({task, feature_vector(features, plan_features(*analysis, schedule_from_json(nlohmann::json::parse(r.schedule_json)))),
                   std::log(r.median_ms)});
    repeats.push_back(1);
  }
  return out;
}

std::unique_ptr<CostModel> train_cost_model(const std::vector<CostSample>& samples, const TrainOptions& opts) {
  auto [order, groups] = grouped(samples);
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (size_t i : order) rows.push_back(samples[i].features), y.push_back(samples[i].log_ms);
  return train_boosted_cost_model(rows, y, opts, groups);
}

CostModelScore cross_validate(const std::vector<CostSample>& samples, int folds, const TrainOptions& opts, int k) {
  std::map<std::string, std::vector<size_t>> by_task;
  for (size_t i = 0; i < samples.size(); ++i) by_task[samples[i].task].push_back(i);
  if (folds < 2 || int(by_task.size()) < folds)
    throw UserError("cross-validation over " + std::to_string(folds) + " folds needs at least that many tasks; the database has " +
                    std::to_string(by_task.size()));
  CostModelScore score{.folds = folds, .k = k};
  for (int f = 0; f < folds; ++f) {
    std::vector<CostSample> train;
    std::vector<const std::vector<size_t>*> held;
    for (auto& [task, idx] : by_task) {
      if (int(fnv1a(task) % uint64_t(folds)) == f) {
        held.push_back(&idx);
      } else {
        for (size_t i : idx) train.push_back(samples[i]);
      }
    }
    if (held.empty() || train.empty()) continue;
    auto model = train_cost_model(train, opts);
    for (auto* idx : held) {
      std::vector<std::vector<double>> rows;
      std::vector<double> measured;
      for (size_t i : *idx) rows.push_back(samples[i].features), measured.push_back(samples[i].log_ms);
      if (rows.size() < 3) continue;
      std::vector<double> predicted = model->predict(rows);
      score.rank_correlation += rank_correlation(predicted, measured);
      ++score.tasks;
      if (rows.size() <= size_t(2 * k)) continue;
      std::vector<size_t> rank(rows.size());
      std::iota(rank.begin(), rank.end(), 0);
      std::stable_sort(rank.begin(), rank.end(), [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
      const double best = *std::min_element(measured.begin(), measured.end());
      auto fraction_of_first_k = [&](const std::vector<size_t>& order) {
        double b = measured[order[0]];
        for (int j = 1; j < k; ++j) b = std::min(b, measured[order[size_t(j)]]);
        return std::exp(best - b);
      };
      score.top_k_fraction += fraction_of_first_k(rank);
      score.search_k_fraction += fraction_of_first_k(search_order(predicted, opts.seed));
      score.random_k_fraction += expected_random_k_fraction(measured, k);
      ++score.top_k_tasks;
    }
  }
  if (score.tasks) score.rank_correlation /= score.tasks;
  if (score.top_k_tasks) {
    score.top_k_fraction /= score.top_k_tasks;
    score.search_k_fraction /= score.top_k_tasks;
    score.random_k_fraction /= score.top_k_tasks;
  }
  return score;
}

}  // namespace kforge
