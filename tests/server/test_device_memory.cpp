// The GPU memory ledger of `kforge serve`: jobs wait while their task does not fit beside what is held,
// a task larger than the GPU still runs alone, and the persistent worker's task counts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/device_memory.h"

namespace kforge {
namespace {

using namespace std::chrono_literals;

TEST(DeviceMemoryLedger, SecondJobWaitsUntilTheFirstReleases) {
  DeviceMemoryLedger ledger(100);
  ledger.acquire(60);
  std::atomic<bool> started{false};
  std::thread second([&] {
    DeviceMemoryReservation r(ledger, 60);
    started = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(started);
  ledger.release(60);
  second.join();
  EXPECT_TRUE(started);
  EXPECT_EQ(ledger.held(), 0);
}

TEST(DeviceMemoryLedger, JobsThatFitRunTogether) {
  DeviceMemoryLedger ledger(100);
  ledger.acquire(40);
  ledger.acquire(40);  // would block the test if it waited
  EXPECT_EQ(ledger.held(), 80);
}

TEST(DeviceMemoryLedger, ATaskLargerThanTheGpuRunsAlone) {
  DeviceMemoryLedger ledger(100);
  { DeviceMemoryReservation alone(ledger, 500); }
  EXPECT_EQ(ledger.held(), 0);
}

TEST(DeviceMemoryLedger, ThePersistentWorkersTaskCountsButDoesNotBlockAJobForever) {
  DeviceMemoryLedger ledger(100);
  ledger.hold(70);
  ledger.acquire(20);  // fits beside it
  std::atomic<bool> started{false};
  std::thread big([&] {
    DeviceMemoryReservation r(ledger, 50);  // fits only once the 20 are released; the worker's 70 alone do not stop it
    started = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(started);
  ledger.release(20);
  big.join();
  EXPECT_TRUE(started);
  ledger.let_go(70);
  EXPECT_EQ(ledger.held(), 0);
}

TEST(DeviceMemoryLedger, NoCapacityMeansNoLimit) {
  DeviceMemoryLedger ledger(0);
  ledger.acquire(1000);
  ledger.acquire(1000);
  EXPECT_EQ(ledger.held(), 2000);
}

}  // namespace
}  // namespace kforge
