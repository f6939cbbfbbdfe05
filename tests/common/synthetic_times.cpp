#include "common/synthetic_times.h"

#include <cmath>

namespace kforge::testing {

double synthetic_log_ms(const TaskFeatures& t, const PlanFeatures& p, std::mt19937_64& rng) {
  double ms = 1e4 * t.floor_ms * (1 + 0.5 * p.passes - 0.3 * p.cached_rows) + 0.005 * p.kernels +
              0.01 * std::fabs(std::log2(p.mean_block) - 8) + 0.002 * p.mean_items;
  return std::log(ms) + std::normal_distribution<double>(0, 0.01)(rng);
}

}  // namespace kforge::testing
