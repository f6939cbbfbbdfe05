#include "env/gpu_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>

#include "ir/error.h"

namespace kforge {

GpuLock::GpuLock(const std::string& path) {
  if (path.empty()) return;
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);  // read-only is enough for flock, and all a sandbox may have
  if (fd_ < 0) throw UserError("GPU lock " + path + " cannot be opened: " + strerror(errno));
  while (flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) throw UserError("GPU lock " + path + ": " + strerror(errno));
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

}  // namespace kforge
