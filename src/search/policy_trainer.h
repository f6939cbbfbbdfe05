// Training the learned policy (issue 5). On the GPU, on-policy: for each task, sample K plans from the
// policy, measure them in the environment (search/measure.h: every measurement goes to the database),
// keep the episodes with their rewards; after a batch of tasks, one PPO update and a checkpoint. Without a
// GPU, off-policy: behaviour cloning of the fastest plans a measurement database recorded (a warm start).
#pragma once
#include <memory>
#include <string>

#include "env/evaluator.h"
#include "search/database.h"
#include "search/learned_policy.h"

namespace kforge {

struct TrainerOptions {
  std::string checkpoint_dir = "kforge_policy";
  int samples = 16;           // plans sampled per task (K)
  int compile_threads = 16;   // NVRTC compiles in parallel before the GPU times the batch
  PolicyOptions policy;
  std::string versions;       // recorded with every measurement
};

class PolicyTrainer {
 public:
  // Resumes from the newest checkpoint in opts.checkpoint_dir, else starts a fresh policy.
  explicit PolicyTrainer(const TrainerOptions& opts);
  // Samples, measures and records K plans for one task; returns a summary (rewards, best speedup).
  nlohmann::json collect(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler);
  // One PPO update over the episodes collected since the last one, then a checkpoint that records
  // `tasks_done` (the caller's position in its task list, to resume from); returns the losses.
  nlohmann::json update(int64_t tasks_done);
  LearnedPolicy& policy() { return *policy_; }
  bool resumed() const { return resumed_; }

 private:
  TrainerOptions opts_;
  std::unique_ptr<LearnedPolicy> policy_;
  bool resumed_ = false;
  std::vector<Episode> pending_;
};

// Behaviour cloning of the `top` fastest correct plans of every task in `db` (rewards as recorded), for
// `epochs` passes; GPU-free. Returns the update's statistics and how many plans it learned from.
nlohmann::json warm_start_from_db(LearnedPolicy& policy, MeasurementDB& db, int top, int epochs, const std::string& gpu = "");

}  // namespace kforge
