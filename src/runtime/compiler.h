// NVRTC compilation to the target's machine code (CUBIN; runtime/target.h, sm_90 where no GPU is), with an
// on-disk cache keyed by source, architecture, options and NVRTC version. NVRTC needs no GPU, so CI compiles every
// generated kernel too.
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "runtime/target.h"

namespace kforge {

struct CompileOptions {
  std::string arch = Target::here().arch();  // real architecture: the CUBIN runs with no JIT at load time
  std::string cache_dir;            // empty = no cache; default_cache_dir() is the usual choice
  std::vector<std::string> extra;   // more NVRTC flags
  // Looked up before cache_dir and never written: kernels trusted code compiled (a candidate's process reads the
  // verifier's there). Keys are SHA-256 of source and flags, so no source can be made to find another's binary.
  std::string read_only_cache_dir = {};
};

struct CompileResult {
  bool ok = false;
  std::string cubin;  // machine code when ok
  std::string log;    // compiler log (errors when !ok)
  bool cache_hit = false;
  double millis = 0;  // compile time (0 on a cache hit)
};

// $KFORGE_CACHE, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge. Read by front ends only.
std::string default_cache_dir();

class Compiler {
 public:
  explicit Compiler(CompileOptions opts) : opts_(std::move(opts)) {}
  // Compiles `source` (entry points are extern "C"); never throws for a compile error: see ok/log.
  CompileResult compile(const std::string& source, const std::string& name) const;
  const CompileOptions& options() const { return opts_; }
  std::string cache_key(const std::string& source) const;

 private:
  CompileOptions opts_;
};

}  // namespace kforge
