#include <gtest/gtest.h>

#include <cmath>

#include "env/reward.h"
#include "env/timing.h"

namespace kforge {
namespace {

TEST(Reward, FailureIsMinusOne) {
  EXPECT_EQ(compute_reward({false, 1.0, 2.0, 2.0}).reward, -1);
  EXPECT_EQ(compute_reward({true, 0.0, 2.0, 2.0}).reward, -1);  // no time measured
}

TEST(Reward, LogSpeedupOverTheBetterBaselinePlusMilestones) {
  RewardResult r = compute_reward({true, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(r.speedup_best, 2.0);
  EXPECT_DOUBLE_EQ(r.reward, 1.0 + std::log(2.0) + 0.25 + 0.25 + 0.5);
  RewardResult slower = compute_reward({true, 4.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(slower.reward, 1.0 + std::log(0.5));
  RewardResult between = compute_reward({true, 2.5, 3.0, 2.0});  // beats eager only
  EXPECT_DOUBLE_EQ(between.reward, 1.0 + std::log(2.0 / 2.5) + 0.25);
}

TEST(Reward, FasterThanTheRooflineIsSuspectAndNotPaid) {
  RewardResult r = compute_reward({true, 0.1, 3.0, 2.0, 0.5});
  EXPECT_TRUE(r.suspect);
  EXPECT_EQ(r.reward, 0);
  EXPECT_FALSE(compute_reward({true, 0.5, 3.0, 2.0, 0.5}).suspect);
}

TEST(Timing, SummaryStatistics) {
  Stats s = summarize({3, 1, 2, 10});
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.mean_ms, 4);
  EXPECT_EQ(s.trials, 4);
}

}  // namespace
}  // namespace kforge
