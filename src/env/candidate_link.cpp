#include "env/candidate_link.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "ir/error.h"

namespace kforge {

namespace {
void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw UserError(std::string("the other end of the candidate link has gone: ") + strerror(errno));
    p += w;
    n -= size_t(w);
  }
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void write_frame(int fd, nlohmann::json header, const std::vector<Bytes>& parts) {
  size_t total = 0;
  for (const Bytes& b : parts) total += b.size;
  if (!parts.empty()) header["bytes"] = total;
  std::string line = header.dump() + "\n";
  write_all(fd, line.data(), line.size());
  for (const Bytes& b : parts) write_all(fd, b.data, b.size);
}

bool FrameReader::fill(double deadline_s, const std::function<void()>& tick) {
  if (eof_) return false;
  for (;;) {
    double left = deadline_s - now_s();
    if (left <= 0) return true;  // the caller sees no progress and names the wait
    pollfd fds[2] = {{fd_, POLLIN, 0}, {side_fd_, POLLIN, 0}};
    int n = poll(fds, side_fd_ >= 0 ? 2 : 1, int(std::min(left, 0.02) * 1000) + 1);
    // Every 20 ms, not every read: a tick may walk /proc (the memory watchdog), and a run's outputs arrive in
    // hundreds of reads.
    if (tick && now_s() - last_tick_s_ >= 0.02) {
      last_tick_s_ = now_s();
      tick();
    }
    if (n < 0 && errno != EINTR) throw UserError(std::string("poll on the candidate link failed: ") + strerror(errno));
    if (n <= 0) continue;
    chunk_.resize(1 << 20);
    if (side_fd_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t got = read(side_fd_, chunk_.data(), chunk_.size());
      if (got <= 0) side_fd_ = -1;
      else if (side_) side_->append(chunk_.data(), std::min(size_t(got), side_max_ > side_->size() ? side_max_ - side_->size() : 0));
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t got = read(fd_, chunk_.data(), chunk_.size());
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        eof_ = true;
        return false;
      }
      buf_.append(chunk_.data(), size_t(got));
      return true;
    }
  }
}

std::optional<Frame> FrameReader::next(double timeout_s, const std::function<void()>& tick) {
  double deadline = now_s() + timeout_s;
  size_t eol;
  while ((eol = buf_.find('\n')) == std::string::npos) {
    if (buf_.size() > (1 << 20)) throw UserError("the candidate sent a header line of over 1 MiB");
    size_t before = buf_.size();
    if (!fill(deadline, tick)) {
      if (buf_.empty()) return std::nullopt;
      throw UserError("the candidate's stream ended inside a header");
    }
    if (buf_.size() == before && now_s() >= deadline)
      throw UserError("no answer from the candidate's process within " + std::to_string(int(timeout_s)) + " s");
  }
  Frame f;
  f.header = nlohmann::json::parse(buf_.substr(0, eol), nullptr, false);
  buf_.erase(0, eol + 1);
  if (f.header.is_discarded() || !f.header.is_object()) throw UserError("the candidate sent a header that is not a JSON object");
  auto bytes = f.header.find("bytes");
  if (bytes == f.header.end()) return f;
  if (!bytes->is_number_unsigned() || bytes->get<uint64_t>() > max_payload_)
    throw UserError("the candidate announced " + bytes->dump() + " bytes; at most " + std::to_string(max_payload_) +
                    " are expected");
  size_t want = bytes->get<size_t>();
  f.payload.reserve(want);
  while (buf_.size() < want) {
    size_t before = buf_.size();
    if (!fill(deadline, tick)) throw UserError("the candidate's stream ended inside a payload");
    if (buf_.size() == before && now_s() >= deadline)
      throw UserError("no answer from the candidate's process within " + std::to_string(int(timeout_s)) + " s");
  }
  f.payload = buf_.substr(0, want);
  buf_.erase(0, want);
  return f;
}

}  // namespace kforge
