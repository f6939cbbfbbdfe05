#include "ir/hash.h"

#include <openssl/evp.h>

#include <cstdint>
#include <cstdio>

#include "ir/error.h"

namespace kforge {

std::string stable_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string content_hash(const std::string& s) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(s.data(), s.size(), digest, &n, EVP_sha256(), nullptr) != 1)
    throw InternalError("SHA-256 failed (OpenSSL's EVP_Digest)");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned i = 0; i < n; ++i) out += hex[digest[i] >> 4], out += hex[digest[i] & 15];
  return out;
}

}  // namespace kforge
