// Hashes of strings, two kinds for two jobs.
// - stable_hash: 64-bit FNV-1a, for keys of trusted data (graph hashes in the measurement database, action
//   spaces). Fast and stable across versions; colliding two of them on purpose is easy, so never for input a
//   candidate writes.
// - content_hash: SHA-256 (OpenSSL's libcrypto), for cache keys of source a candidate writes (NVRTC kernels, raw
//   CUDA builds): with FNV-1a a candidate could be made to collide with another's build and be judged by it.
#pragma once
#include <string>

namespace kforge {

// 16 hex digits.
std::string stable_hash(const std::string& s);

// 64 hex digits (SHA-256).
std::string content_hash(const std::string& s);

}  // namespace kforge
