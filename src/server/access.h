// Who may call the service, and which paths on its disk a request may name.
// - Tokens: a file the operator manages, one "NAME TOKEN" per line ('#' comments). A request carries
//   `Authorization: Bearer TOKEN`; its NAME owns the tasks and jobs it creates, and sees only those.
// - Paths: with a data root, a bundle or problem path is resolved (symlinks and `..` included) and must lie
//   inside it; a problem can always be uploaded as text instead.
#pragma once
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace kforge {

class Tokens {
 public:
  Tokens() = default;  // no file: authentication off
  // Throws UserError naming the line that is malformed, a token shorter than 16 characters, or a repeated one.
  static Tokens load(const std::string& path);
  bool enabled() const { return !by_hash_.empty(); }
  // The caller's name for an `Authorization` header's value; nullopt for a missing or unknown token.
  std::optional<std::string> who(const std::string& authorization) const;

 private:
  std::map<std::string, std::string> by_hash_;  // SHA-256 of the token -> name: no token kept in memory
};

// Requests per caller: a token bucket each, refilled at `per_second` up to `burst`. 0 per second: no limit.
class RateLimiter {
 public:
  RateLimiter(double per_second = 0, double burst = 0) : rate_(per_second), burst_(std::max(1.0, burst)) {}
  bool allow(const std::string& who);  // false: over the rate (429)

 private:
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point at;
  };
  double rate_, burst_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

// Whether `host` listens on this machine only.
bool is_loopback(const std::string& host);

// `path` resolved (symlinks, `..`); with a non-empty `root`, it must lie inside the resolved root. Throws
// UserError naming the path and why it is refused.
std::string resolved_within(const std::string& root, const std::string& path);

}  // namespace kforge
