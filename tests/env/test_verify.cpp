#include <gtest/gtest.h>

#include "env/verify.h"
#include "runtime/compiler.h"

namespace kforge {
namespace {

TEST(Verify, KernelsCompileForSm90) {
  CompileResult r = Compiler({"sm_90", "", {}}).compile(verification_source(), "kf_compare");
  ASSERT_TRUE(r.ok) << r.log;
}

TEST(Verify, DescribesTheFirstMismatch) {
  CompareResult c;
  c.count = 100;
  c.bad_strict = 3;
  c.bad_relaxed = 1;
  c.first_bad = 17;
  c.got = 1.5;
  c.expected = 2.0;
  EXPECT_FALSE(c.strict());
  EXPECT_FALSE(c.relaxed());
  std::string d = c.describe("y");
  EXPECT_NE(d.find("3 of 100 elements outside 1e-4"), std::string::npos) << d;
  EXPECT_NE(d.find("first at index 17: got 1.5"), std::string::npos) << d;
  c.bad_strict = c.bad_relaxed = 0;
  c.nonfinite = 2;  // NaN never passes, in either tier
  EXPECT_FALSE(c.relaxed());
}

}  // namespace
}  // namespace kforge

#include "common/hack_plans.h"

namespace kforge {
namespace {

TEST(HackCatalogue, EveryAdversarialPlanCompiles) {
  // The GPU suite (tests/gpu/test_hacks.cpp) runs them; here they must at least be real kernels.
  Compiler c({"sm_90", "", {}});
  auto hacks = testing::hack_plans();
  EXPECT_GE(hacks.size(), 8u);
  for (auto& h : hacks) {
    CompileResult r = c.compile(h.plan.kernels.at(0).source, "hack");
    EXPECT_TRUE(r.ok) << h.name << "\n" << r.log;
  }
}

}  // namespace
}  // namespace kforge
