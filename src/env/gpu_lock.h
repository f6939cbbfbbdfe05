// Exclusive use of a GPU across processes (flock on a file), for the part of an evaluation that must not
// overlap another's: checks and timing. The service runs several evaluation processes per GPU so that
// one loads its task (process start, CUDA context, uploading the hidden sets) while another is timed;
// only the timed part takes turns.
#pragma once
#include <functional>
#include <string>

namespace kforge {

class GpuLock {
 public:
  // Blocks until the lock on `path` is held; "" = no lock. Throws UserError when the file cannot be opened.
  // With `tick`, waits by polling every 20 ms and calls it between tries (it throws to stop the wait).
  explicit GpuLock(const std::string& path, const std::function<void()>& tick = {});
  ~GpuLock();
  GpuLock(const GpuLock&) = delete;
  GpuLock& operator=(const GpuLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kforge
