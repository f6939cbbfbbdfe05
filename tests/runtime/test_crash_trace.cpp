// The crash trace names the signal and prints native frames before the process dies of it.
#include <gtest/gtest.h>

#include <csignal>

#include "runtime/crash_trace.h"

namespace kforge {
namespace {

TEST(CrashTrace, SegfaultPrintsTheSignalAndTheNativeStackThenDiesOfIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_crash_trace();
        std::raise(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV), "fatal signal: Segmentation fault; native stack.*\n.*test_runtime");
}

TEST(CrashTrace, InstalledOnlyWhenAsked) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        unsetenv("KFORGE_CRASH_TRACE");
        install_crash_trace_if_asked();
        std::raise(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV), "^$");
}

}  // namespace
}  // namespace kforge
