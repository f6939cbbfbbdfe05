#include "env/gpu_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "ir/error.h"

namespace kforge {

GpuLock::GpuLock(const std::string& path, const std::function<void()>& tick) {
  if (path.empty()) return;
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);  // read-only is enough for flock
  if (fd_ < 0) throw UserError("GPU lock " + path + " cannot be opened: " + strerror(errno));
  try {
    while (flock(fd_, tick ? LOCK_EX | LOCK_NB : LOCK_EX) != 0) {
      if (errno != EINTR && errno != EWOULDBLOCK) throw UserError("GPU lock " + path + ": " + strerror(errno));
      if (errno == EWOULDBLOCK) {
        tick();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } catch (...) {
    close(fd_);
    throw;
  }
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

}  // namespace kforge
