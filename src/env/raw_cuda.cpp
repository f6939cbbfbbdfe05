#include "env/raw_cuda.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <thread>

#include "ir/error.h"
#include "ir/hash.h"

namespace kforge {

namespace fs = std::filesystem;

RawCudaBuild build_raw_cuda(const std::string& source, const RawCudaOptions& o) {
  RawCudaBuild b;
  std::string key = o.nvcc;
  for (auto& f : o.flags) key += " " + f;
  fs::path dir = fs::path(o.cache_dir) / ("raw-" + content_hash(key + "\n" + source));
  b.so_path = (dir / "candidate.so").string();
  if (fs::exists(b.so_path)) {
    b.ok = b.cache_hit = true;
    return b;
  }
  fs::create_directories(dir);
  SandboxOptions so = o.sandbox;
  so.timeout_s = o.timeout_s;
  so.scratch_dir = dir.string();
  if (geteuid() == 0 && so.uid != 0 && chown(dir.c_str(), so.uid, so.gid) != 0)
    throw UserError("cannot hand " + dir.string() + " to the sandbox user: " + strerror(errno));
  std::ofstream(dir / "candidate.cu") << source;
  // A name of this build's own: two builds of one source (a resubmitted candidate) may run at once.
  std::string tmp = "candidate.so." + std::to_string(getpid()) + "." + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  std::vector<std::string> argv = {o.nvcc};
  argv.insert(argv.end(), o.flags.begin(), o.flags.end());
  argv.insert(argv.end(), {"-o", (dir / tmp).string(), (dir / "candidate.cu").string()});
  auto t0 = std::chrono::steady_clock::now();
  SandboxResult r = run_sandboxed(argv, so);
  b.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  b.log = r.out + r.err;
  if (!r.ok() && fs::exists(b.so_path)) {  // a concurrent build of the same source finished first
    std::error_code ignored;
    fs::remove(dir / tmp, ignored);
    b.ok = b.cache_hit = true;
    return b;
  }
  if (!r.ok()) {
    b.log = "nvcc " + r.cause() + ":\n" + b.log;
    return b;
  }
  fs::rename(dir / tmp, b.so_path);
  if (geteuid() == 0 && so.uid != 0)  // built: no later sandbox may change it
    for (const fs::path& p : {dir, fs::path(b.so_path)}) (void)!chown(p.c_str(), 0, 0);
  b.ok = true;
  return b;
}

RawCudaCandidate::RawCudaCandidate(const std::string& so_path) {
  handle_ = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw UserError(std::string("candidate cannot be loaded: ") + dlerror());
  entry_ = reinterpret_cast<Entry>(dlsym(handle_, "kforge_forward"));
  if (!entry_) throw UserError("candidate does not export extern \"C\" kforge_forward (see `kforge abi BUNDLE`)");
}

RawCudaCandidate::~RawCudaCandidate() {
  if (handle_) dlclose(handle_);
}

void RawCudaCandidate::run(const Bindings& b, CUstream stream) {
  std::vector<void*> out;
  for (auto p : b.outputs) out.push_back(reinterpret_cast<void*>(p));
  std::vector<const void*> in_ptrs, par_ptrs;
  for (auto p : b.inputs) in_ptrs.push_back(reinterpret_cast<const void*>(p));
  for (auto p : b.params) par_ptrs.push_back(reinterpret_cast<const void*>(p));
  int rc = entry_(in_ptrs.data(), par_ptrs.data(), out.data(), stream);
  if (rc != 0) throw UserError("candidate's kforge_forward returned " + std::to_string(rc));
}

std::string abi_header(const Graph& g) {
  std::string s = "// kforge task ABI. Tensors are contiguous, 16-byte aligned device pointers.\n";
  auto list = [&](const char* what, const std::vector<int>& ids) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const Node& n = g.at(ids[i]);
      s += std::string("//   ") + what + "[" + std::to_string(i) + "] " + n.name + ": " + to_string(n.type.dtype) + " " +
           to_string(n.type.shape) + "\n";
    }
  };
  list("inputs", g.inputs);
  list("params", g.params);
  list("outputs", g.outputs);
  s += "// Return 0 on success; do all work on `stream`.\n";
  s += "#include <cuda_runtime.h>\n";
  s += "extern \"C\" int kforge_forward(const void* const* inputs, const void* const* params,\n"
       "                              void* const* outputs, cudaStream_t stream);\n";
  return s;
}

}  // namespace kforge
