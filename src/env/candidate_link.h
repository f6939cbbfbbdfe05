// The wire between a trusted judge (env/judge.h) and a candidate's process (env/candidate_runner.h): frames of
// one line of JSON, followed by `bytes` raw bytes where the header says so (a run's outputs). Both ends treat
// what they read as untrusted: a header that is not JSON, a payload over the reader's bound or a stream that
// ends mid-frame is an error naming what came, never a crash.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

struct Frame {
  nlohmann::json header;
  std::string payload;
};

// Writes the header (with "bytes": the sum of the parts' sizes when there are parts) and the parts. Throws
// UserError when the other end has gone.
struct Bytes {
  const void* data;
  size_t size;
};
void write_frame(int fd, nlohmann::json header, const std::vector<Bytes>& parts = {});

// Reads frames from `fd`; while it waits, also drains `side_fd` (the other process's stderr, so that it never
// blocks on a full pipe) into `side` up to `side_max` bytes, and calls `tick` about every 20 ms (limits to
// watch; it throws to stop the wait).
class FrameReader {
 public:
  FrameReader(int fd, size_t max_payload, int side_fd = -1, std::string* side = nullptr, size_t side_max = 1 << 20)
      : fd_(fd), side_fd_(side_fd), max_payload_(max_payload), side_(side), side_max_(side_max) {}
  // The next frame; nullopt when the stream ends cleanly between frames. Throws UserError on a malformed frame,
  // an end mid-frame, or `timeout_s` passing (naming the wait).
  std::optional<Frame> next(double timeout_s, const std::function<void()>& tick = {});

 private:
  bool fill(double deadline_s, const std::function<void()>& tick);  // false at end of stream
  int fd_, side_fd_;
  size_t max_payload_;
  std::string* side_;
  size_t side_max_;
  std::string buf_;
  std::vector<char> chunk_;  // one read's bytes
  double last_tick_s_ = 0;
  bool eof_ = false;
};

}  // namespace kforge
