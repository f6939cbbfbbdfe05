// GPU memory shared by a GPU's evaluation processes. Each one uploads its task's hidden sets (inputs and
// reference outputs of every set, the params, one set of outputs): for a large task that is tens of GB, so
// a few slots side by side can run the GPU out of memory, failing correct candidates for the service's
// sake. A job reserves its task's footprint before its process starts and waits while it does not fit.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "env/bundle.h"

namespace kforge {

// Bytes a task occupies on the device once loaded (env/evaluator.h, DeviceTask), plus the context and
// the candidate's own temporaries (a fixed allowance).
int64_t task_device_bytes(const Bundle& b);

class DeviceMemoryLedger {
 public:
  explicit DeviceMemoryLedger(int64_t capacity) : capacity_(capacity) {}  // capacity 0: no limit
  // For one job: blocks until `bytes` fit beside what is held, or until no other job holds any (a task
  // larger than the GPU gets its turn alone, and fails with the driver's error).
  void acquire(int64_t bytes);
  void release(int64_t bytes);
  // For the persistent worker, which keeps its task between jobs: waits like acquire, then holds the bytes
  // until let_go, without counting as a job (a job larger than what is left may still run once no other
  // job holds memory).
  void hold(int64_t bytes);
  void let_go(int64_t bytes);
  int64_t held() const;
  int64_t capacity() const { return capacity_; }

 private:
  void wait_and_hold(std::unique_lock<std::mutex>& lock, int64_t bytes);
  const int64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t held_ = 0;
  int jobs_ = 0;  // acquisitions outstanding
};

// Releases a job's reservation when the job is done, however it ends.
class DeviceMemoryReservation {
 public:
  DeviceMemoryReservation(DeviceMemoryLedger& ledger, int64_t bytes) : ledger_(ledger), bytes_(bytes) { ledger_.acquire(bytes_); }
  ~DeviceMemoryReservation() { ledger_.release(bytes_); }
  DeviceMemoryReservation(const DeviceMemoryReservation&) = delete;
  DeviceMemoryReservation& operator=(const DeviceMemoryReservation&) = delete;

 private:
  DeviceMemoryLedger& ledger_;
  int64_t bytes_;
};

}  // namespace kforge
