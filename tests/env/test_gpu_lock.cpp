// Evaluations take turns on a GPU: a second holder waits until the first lets go, across processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "common/scratch_path.h"
#include "env/gpu_lock.h"
#include "ir/error.h"

namespace kforge {
namespace {

TEST(GpuLock, SecondHolderWaitsForTheFirst) {
  std::string path = testing::scratch_path("kforge-gpu0.lock");
  std::ofstream(path).flush();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    GpuLock held(path);
    (void)!write(ready[1], "x", 1);
    usleep(300000);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto t0 = std::chrono::steady_clock::now();
  { GpuLock mine(path); }
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  waitpid(child, nullptr, 0);
  EXPECT_GT(waited, 0.2);
  auto t1 = std::chrono::steady_clock::now();
  { GpuLock again(path); }  // free now: no wait
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 0.1);
}

// The judge waits for a candidate's turn with its limits still watched: the tick runs while the lock is held
// elsewhere, and its throw ends the wait.
TEST(GpuLock, AWaitWithATickCanBeStopped) {
  std::string path = testing::scratch_path("kforge-gpu1.lock");
  std::ofstream(path).flush();
  GpuLock held(path);
  int ticks = 0;
  try {
    GpuLock waiting(path, [&] {
      if (++ticks == 3) throw UserError("past the job's time");
    });
    FAIL() << "took a lock held elsewhere";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "past the job's time");
  }
  EXPECT_EQ(ticks, 3);
}

TEST(GpuLock, NoPathMeansNoLockAndAMissingFileIsNamed) {
  EXPECT_NO_THROW(GpuLock none(""));
  try {
    GpuLock missing("/nonexistent/gpu0.lock");
    FAIL() << "opened a missing lock file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/gpu0.lock"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge
