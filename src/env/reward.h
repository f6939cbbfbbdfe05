// The reward (DESIGN.md): -1 for a candidate that fails to compile or verify; otherwise a base of 1,
// plus log(speedup over the better baseline) clipped to [-2, 2], plus milestones for beating eager,
// beating torch.compile, and beating both by 5% (CUDA-Agent pays milestones only; the log term keeps a
// gradient between them). A speedup the roofline says is impossible pays nothing until re-measured.
#pragma once

namespace kforge {

struct RewardInputs {
  bool correct = false;
  double candidate_ms = 0, eager_ms = 0, compile_ms = 0;
  double floor_ms = 0;  // the roofline floor (minimum bytes / copy bandwidth); 0 = unknown
};

struct RewardResult {
  double reward = -1;
  double speedup_eager = 0, speedup_compile = 0, speedup_best = 0;
  bool suspect = false;  // faster than the roofline allows
};

RewardResult compute_reward(const RewardInputs& in);

}  // namespace kforge
