#include "server/device_memory.h"

#include <algorithm>

namespace kforge {

int64_t task_device_bytes(const Bundle& b) {
  auto sum = [&](const std::vector<int>& ids) {
    int64_t n = 0;
    for (int id : ids) n += nbytes(b.graph.at(id).type);
    return n;
  };
  const int64_t allowance = int64_t(1) << 30;  // CUDA context, modules, the candidate's temporaries
  int64_t largest_input = 0;  // the evaluator's scratch for the check after timing (DeviceTask::exchange_inputs)
  for (int id : b.graph.inputs) largest_input = std::max(largest_input, nbytes(b.graph.at(id).type));
  return sum(b.graph.params) + b.num_sets() * (sum(b.graph.inputs) + sum(b.graph.outputs)) + sum(b.graph.outputs) +
         largest_input + allowance;
}

void DeviceMemoryLedger::wait_and_hold(std::unique_lock<std::mutex>& lock, int64_t bytes) {
  cv_.wait(lock, [&] { return capacity_ == 0 || held_ + bytes <= capacity_ || jobs_ == 0; });
  held_ += bytes;
}

void DeviceMemoryLedger::hold(int64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  wait_and_hold(lock, bytes);
}

void DeviceMemoryLedger::let_go(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ -= bytes;
  }
  cv_.notify_all();
}

void DeviceMemoryLedger::acquire(int64_t bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  wait_and_hold(lock, bytes);
  ++jobs_;
}

void DeviceMemoryLedger::release(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --jobs_;
  }
  let_go(bytes);
}

int64_t DeviceMemoryLedger::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

}  // namespace kforge
