#include "search/policy_trainer.h"

#include <algorithm>
#include <map>

#include "ir/error.h"
#include "runtime/target.h"
#include "search/measure.h"

namespace kforge {

PolicyTrainer::PolicyTrainer(const TrainerOptions& opts)
    : opts_(opts), policy_(resume_or_start(opts.checkpoint_dir, opts.policy)), resumed_(policy_->step() > 0) {}

nlohmann::json PolicyTrainer::collect(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler) {
  PlanMeter meter(spec, task, db, compiler, opts_.versions, opts_.compile_threads);
  GpuInfo gpu{meter.copy_gbs(), Target::here().sms};
  std::vector<Episode> episodes;
  std::vector<Schedule> schedules;
  for (int k = 0; k < opts_.samples; ++k) {
    episodes.push_back(policy_->sample(meter.analysis(), gpu));
    schedules.push_back(episodes.back().schedule);
  }
  auto results = meter.measure(schedules);
  double sum = 0, best = 0;
  int correct = 0, distinct = 0;
  for (size_t i = 0; i < episodes.size(); ++i) {
    const EvalResult& r = results[i].eval;
    episodes[i].reward = r.reward.reward;
    sum += r.reward.reward;
    correct += r.relaxed;
    distinct += !results[i].repeat;
    if (r.relaxed) best = std::max(best, r.reward.speedup_best);
    pending_.push_back(std::move(episodes[i]));
  }
  return {{"task", spec.name}, {"samples", episodes.size()}, {"distinct_plans", distinct}, {"correct", correct},
          {"mean_reward", sum / std::max<size_t>(1, episodes.size())}, {"best_speedup", best}};
}

nlohmann::json PolicyTrainer::update(int64_t tasks_done) {
  if (pending_.empty()) throw UserError("policy update: no episodes collected since the last update");
  UpdateStats s = policy_->update(pending_);
  pending_.clear();
  policy_->progress()["tasks_done"] = tasks_done;
  std::string path = checkpoint_path(opts_.checkpoint_dir, policy_->step());
  policy_->save(path);
  nlohmann::json j = s.to_json();
  j["step"] = policy_->step();
  j["checkpoint"] = path;
  j["tasks_done"] = tasks_done;
  return j;
}

nlohmann::json warm_start_from_db(LearnedPolicy& policy, MeasurementDB& db, int top, int epochs, const std::string& gpu) {
  std::map<std::string, std::vector<MeasurementDB::TrainingRow>> by_task;
  for (auto& r : db.training_rows(gpu)) by_task[r.graph_hash].push_back(std::move(r));
  std::vector<Episode> episodes;
  int skipped = 0;
  for (auto& [hash, rows] : by_task) {
    std::stable_sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.median_ms < b.median_ms; });
    std::shared_ptr<const GraphAnalysis> g;
    try {
      g = analyze(graph_from_json(nlohmann::json::parse(rows[0].graph_json)));
    } catch (const UserError&) {  // a graph this build no longer decomposes: nothing of it to imitate
      skipped += int(std::min<size_t>(rows.size(), size_t(std::max(top, 0))));
      continue;
    }
    for (size_t i = 0; i < rows.size() && int(i) < top; ++i) {
      try {
        Episode e = policy.replay(*g, {}, schedule_from_json(nlohmann::json::parse(rows[i].schedule_json)));
        e.reward = rows[i].reward;
        episodes.push_back(std::move(e));
      } catch (const UserError&) {
        ++skipped;  // a schedule from an older action space: nothing to imitate
      }
    }
  }
  if (episodes.empty()) throw UserError("the measurement database has no correct plan to learn from; measure some first");
  nlohmann::json j = policy.imitate(episodes, epochs).to_json();
  j["tasks"] = by_task.size();
  j["skipped"] = skipped;
  j["step"] = policy.step();
  return j;
}

}  // namespace kforge
