#include "runtime/compiler.h"

#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "ir/hash.h"

namespace kforge {

namespace fs = std::filesystem;

std::string default_cache_dir() {
  if (const char* e = std::getenv("KFORGE_CACHE")) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::string(x) + "/kforge";
  if (const char* h = std::getenv("HOME")) return std::string(h) + "/.cache/kforge";
  return "/tmp/kforge-cache";
}

namespace {
std::vector<std::string> flags(const CompileOptions& o) {
  std::vector<std::string> f = {"--gpu-architecture=" + o.arch, "--std=c++17", "-default-device", "-lineinfo"};
  f.insert(f.end(), o.extra.begin(), o.extra.end());
  return f;
}
std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}
}  // namespace

std::string Compiler::cache_key(const std::string& source) const {
  std::string k = nvrtc_version();
  for (auto& f : flags(opts_)) k += "\n" + f;
  return content_hash(k + "\n" + source);
}

CompileResult Compiler::compile(const std::string& source, const std::string& name) const {
  CompileResult r;
  fs::path cached;
  for (const std::string& dir : {opts_.read_only_cache_dir, opts_.cache_dir}) {
    if (dir.empty()) continue;
    fs::path path = fs::path(dir) / (cache_key(source) + ".cubin");
    if (dir == opts_.cache_dir) cached = path;
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      r.cubin = ss.str();
      r.ok = !r.cubin.empty();
      r.cache_hit = r.ok;
      if (r.ok) return r;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    r.log = "nvrtcCreateProgram failed for " + name;
    return r;
  }
  auto f = flags(opts_);
  std::vector<const char*> argv;
  for (auto& s : f) argv.push_back(s.c_str());
  nvrtcResult res = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  r.log.resize(log_size);
  if (log_size) nvrtcGetProgramLog(prog, r.log.data());
  while (!r.log.empty() && (r.log.back() == '\0' || r.log.back() == '\n')) r.log.pop_back();
  if (res == NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetCUBINSize(prog, &n);
    r.cubin.resize(n);
    nvrtcGetCUBIN(prog, r.cubin.data());
    r.ok = n > 0;
  } else {
    r.log = std::string(nvrtcGetErrorString(res)) + " compiling " + name + ":\n" + r.log;
  }
  nvrtcDestroyProgram(&prog);
  r.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (r.ok && !cached.empty()) {  // write-then-rename: concurrent compilers never see half a file
    std::error_code ec;
    fs::create_directories(cached.parent_path(), ec);
    fs::path tmp = cached;
    tmp += ".tmp" + std::to_string(::getpid());
    std::ofstream(tmp, std::ios::binary).write(r.cubin.data(), std::streamsize(r.cubin.size()));
    fs::rename(tmp, cached, ec);
  }
  return r;
}

}  // namespace kforge
