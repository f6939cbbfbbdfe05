#include "server/access.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/hash.h"

namespace kforge {

namespace fs = std::filesystem;

Tokens Tokens::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read the token file " + path);
  Tokens t;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string name, token, extra;
    if (!(words >> name) || name[0] == '#') continue;
    if (!(words >> token) || (words >> extra))
      throw UserError(path + ":" + std::to_string(n) + ": a line is NAME TOKEN");
    if (token.size() < 16) throw UserError(path + ":" + std::to_string(n) + ": a token has at least 16 characters");
    if (!t.by_hash_.emplace(content_hash(token), name).second)
      throw UserError(path + ":" + std::to_string(n) + ": the same token twice");
  }
  if (t.by_hash_.empty()) throw UserError("the token file " + path + " holds no token");
  return t;
}

std::optional<std::string> Tokens::who(const std::string& authorization) const {
  const std::string bearer = "Bearer ";
  if (authorization.rfind(bearer, 0) != 0) return std::nullopt;
  // Looked up by hash: comparing the hash leaks nothing useful about the token itself.
  auto it = by_hash_.find(content_hash(authorization.substr(bearer.size())));
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

bool RateLimiter::allow(const std::string& who) {
  if (rate_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  auto [it, fresh] = buckets_.try_emplace(who, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!fresh) b.tokens = std::min(burst_, b.tokens + rate_ * std::chrono::duration<double>(now - b.at).count());
  b.at = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string resolved_within(const std::string& root, const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) throw UserError("cannot resolve " + path + ": " + ec.message());
  if (root.empty()) return p.string();
  fs::path r = fs::weakly_canonical(fs::absolute(root), ec);
  if (ec) throw UserError("cannot resolve the data root " + root + ": " + ec.message());
  auto [end, _] = std::mismatch(r.begin(), r.end(), p.begin(), p.end());
  if (end != r.end()) throw UserError(path + " lies outside the data root " + r.string() + " (as " + p.string() + ")");
  return p.string();
}

}  // namespace kforge
