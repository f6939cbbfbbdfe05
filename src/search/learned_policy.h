// A policy learned from measured speed (issue 5). An actor scores each legal candidate of a decision
// (decisions.h) from its feature row, a softmax over the candidates (pointer-style) gives the choice; a
// critic predicts the task's expected reward from its features alone and is the baseline of the advantage.
// Updates are PPO (clipped ratio, entropy bonus, value loss) on sampled plans and the environment's reward
// (env/reward.h), or behaviour cloning of the best plans a measurement database recorded (a warm start that
// needs no GPU). The networks are libtorch's, on the CPU (they are small; the GPU stays free for timing);
// this header is torch-free so that only learned_policy_torch.cpp pays for torch's headers, and a build
// without libtorch (learned_policy_none.cpp) says what is missing.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/decisions.h"

namespace kforge {

// Knobs of the learner, with their defaults.
struct PolicyOptions {
  int hidden = 64;             // width of both networks' two hidden layers
  double learning_rate = 3e-3;  // Adam
  double clip = 0.2;           // PPO ratio clip
  double entropy_bonus = 0.01; // keeps exploring while rewards are noisy
  double value_weight = 0.5;   // critic loss weight
  int epochs = 4;              // passes over one batch of episodes per update
  uint64_t seed = 1;           // network initialisation and sampling
};

// One sampled (or replayed) plan: its decisions, the task row, the log-probability the sampling policy gave
// it, and, once measured, its reward.
struct Episode {
  std::vector<Decision> decisions;
  FeatureRow task;
  Schedule schedule;
  double log_prob = 0;
  double reward = 0;
};

struct UpdateStats {
  double policy_loss = 0, value_loss = 0, entropy = 0, mean_reward = 0, approx_kl = 0;
  int episodes = 0;
  nlohmann::json to_json() const;
};

// Search trusts the policy, but not blindly: a policy trained on a few dozen tasks can be sure of a choice that
// its training never contradicted. On a held-out task, a cumsum along the contiguous axis, the
// trained policy gave "one thread per line" (fast on its training scans, which ran along strided axes) to all
// 64 of its proposals and stayed 2.6x behind random search. Every other proposal therefore takes each
// decision uniformly with this probability.
inline constexpr double kProposalExploration = 0.3;

class LearnedPolicy {
 public:
  explicit LearnedPolicy(const PolicyOptions& opts = {});
  ~LearnedPolicy();
  LearnedPolicy(const LearnedPolicy&) = delete;
  LearnedPolicy& operator=(const LearnedPolicy&) = delete;

  // Samples a plan decision by decision; greedy takes the most probable candidate each time. With `explore`
  // > 0 each decision is, with that probability, a uniform draw among its legal candidates instead (the
  // episode's log_prob stays the policy's own: such samples are for search, not for PPO's ratio).
  Episode sample(const GraphAnalysis& analysis, const GpuInfo& gpu, bool greedy = false, double explore = 0.0);
  // Up to `count` distinct schedules for search: the greedy plan first, then samples, every other draw
  // exploring (kProposalExploration; a draw that repeats a proposal is dropped).
  std::vector<Schedule> propose(const GraphAnalysis& analysis, const GpuInfo& gpu, int count);
  // The decisions that build a recorded schedule (for behaviour cloning); log_prob under this policy.
  Episode replay(const GraphAnalysis& analysis, const GpuInfo& gpu, const Schedule& s);
  // Probability of each candidate of one decision, under the current networks.
  std::vector<double> probabilities(const Decision& d) const;
  double value(const FeatureRow& task) const;

  // One PPO update over measured episodes (log_prob: the sampling policy's); counts one step.
  UpdateStats update(const std::vector<Episode>& episodes);
  // Behaviour cloning of good plans, with the critic fitted to their rewards; counts one step.
  UpdateStats imitate(const std::vector<Episode>& episodes, int epochs);

  int64_t step() const;
  // Free-form training progress saved with the checkpoint (tasks consumed, for resuming).
  nlohmann::json& progress();

  // Networks, optimizer, step, sampling RNG and progress in one file, stamped with action_space_version().
  void save(const std::string& path) const;
  // Throws UserError naming both versions when the checkpoint was trained on another action space.
  static std::unique_ptr<LearnedPolicy> load(const std::string& path, const PolicyOptions& opts = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether this build has libtorch (KFORGE_WITH_TORCH); without it every LearnedPolicy call throws UserError.
bool learned_policy_available();

// Checkpoint files are DIR/policy-<step>.pt; the newest is the one with the highest step ("" if none).
std::string checkpoint_path(const std::string& dir, int64_t step);
std::string newest_checkpoint(const std::string& dir);
// The policy of the newest checkpoint in `dir`, or a fresh one when there is none.
std::unique_ptr<LearnedPolicy> resume_or_start(const std::string& dir, const PolicyOptions& opts);
// Throws UserError, naming both, when a checkpoint's recorded schema (its "action_space" and "features")
// is not this build's.
void check_checkpoint_schema(const nlohmann::json& meta, const std::string& path);
nlohmann::json checkpoint_schema();

}  // namespace kforge
