#include "env/torch_pch.h"

#include <unistd.h>

#include <map>
#include <mutex>

#include "env/sandbox.h"

namespace kforge {

std::string ensure_torch_pch(const PythonRuntime& py, const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::string> done;  // folder -> "" or why not
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = done.find(dir); it != done.end()) return it->second;
  SandboxOptions o;  // trusted: limits only, as this process's own user
  o.namespaces = false;
  o.uid = geteuid();
  o.gid = getegid();
  o.timeout_s = 900;
  o.memory_bytes = 0;                 // GCC holds torch's headers whole, ~2-3 GB a level
  o.max_file_bytes = 8LL << 30;       // each header is ~0.8 GB
  o.max_processes = 1 << 20;          // RLIMIT_NPROC counts this user's every thread, the service's included
  o.seccomp = false;
  o.env = {{"PYTHONPATH", py.kforge_dir}};
  o.env_passed.push_back("HOME");
  SandboxResult r = run_sandboxed({py.exe, "-m", "kforge.extension_build", "--pch", dir}, o);
  std::string why;
  if (!r.ok()) {
    std::string err = r.err.substr(r.err.size() > 600 ? r.err.size() - 600 : 0);
    why = "torch's headers could not be precompiled in " + dir + " (" + r.cause() + "): " + err;
  }
  return done[dir] = why;
}

}  // namespace kforge
