#include "env/reward.h"

#include <algorithm>
#include <cmath>

namespace kforge {

RewardResult compute_reward(const RewardInputs& in) {
  RewardResult r;
  if (!in.correct || in.candidate_ms <= 0) return r;
  r.speedup_eager = in.eager_ms > 0 ? in.eager_ms / in.candidate_ms : 0;
  r.speedup_compile = in.compile_ms > 0 ? in.compile_ms / in.candidate_ms : 0;
  double best = std::min(in.eager_ms > 0 ? in.eager_ms : 1e30, in.compile_ms > 0 ? in.compile_ms : 1e30);
  r.speedup_best = best < 1e30 ? best / in.candidate_ms : 0;
  // 10% below the floor is beyond timing noise: the time cannot be real.
  r.suspect = in.floor_ms > 0 && in.candidate_ms < 0.9 * in.floor_ms;
  if (r.suspect) {
    r.reward = 0;
    return r;
  }
  r.reward = 1.0;
  if (r.speedup_best > 0) r.reward += std::clamp(std::log(r.speedup_best), -2.0, 2.0);
  if (r.speedup_eager > 1) r.reward += 0.25;
  if (r.speedup_compile > 1) r.reward += 0.25;
  if (r.speedup_eager > 1.05 && r.speedup_compile > 1.05) r.reward += 0.5;
  return r;
}

}  // namespace kforge
