// Raw CUDA candidates: a .cu file an agent (or a person) writes, with host code and kernels, exporting the
// C ABI entry point kforge declares for every task (`kforge abi BUNDLE` prints it):
//
//   extern "C" int kforge_forward(const void* const* inputs, const void* const* params,
//                                 void* const* outputs, cudaStream_t stream);
//
// It returns 0 on success and must do all its work on `stream`. nvcc builds it into a shared object
// (cached by source and flags); the environment loads it with dlopen and calls it like a plan. The code is
// untrusted: the service runs the whole evaluation in its sandbox.
#pragma once
#include <string>
#include <vector>

#include "env/sandbox.h"
#include "ir/graph.h"
#include "runtime/executable.h"
#include "runtime/target.h"

namespace kforge {

struct RawCudaOptions {
  std::string cache_dir;            // shared objects by hash; must exist or be creatable
  std::string nvcc = "nvcc";
  // Add "-lcublas" (and an rpath to the CUDA libraries) for candidates that call cuBLAS.
  std::vector<std::string> flags = {"-O3", std::string("-arch=").append(Target::here().arch()), "-shared", "-Xcompiler", "-fPIC"};
  double timeout_s = 300;           // compile time limit
  // Where nvcc runs: the compiler is trusted, its input is not. The default keeps the caller's user and
  // file system (seccomp, memory and time limits only); the service passes its bubblewrap sandbox, and
  // the candidate's cache folder, the only writable one, is handed to the sandbox user for the build.
  SandboxOptions sandbox = [] {
    SandboxOptions s;
    s.namespaces = false;
    s.uid = 0;
    s.memory_bytes = 16LL << 30;  // resident; nvcc's front end can need several GiB on big templates
    return s;
  }();
};

struct RawCudaBuild {
  bool ok = false;
  std::string so_path, log;
  bool cache_hit = false;
  double millis = 0;
};

RawCudaBuild build_raw_cuda(const std::string& source, const RawCudaOptions& opts);

class RawCudaCandidate : public Executable {
 public:
  explicit RawCudaCandidate(const std::string& so_path);  // throws UserError (no entry point, bad object)
  ~RawCudaCandidate() override;
  void run(const Bindings& b, CUstream stream) override;

 private:
  using Entry = int (*)(const void* const*, const void* const*, void* const*, CUstream);
  void* handle_ = nullptr;
  Entry entry_ = nullptr;
};

// The entry point's declaration with one comment line per tensor (index, name, dtype, shape).
std::string abi_header(const Graph& g);

}  // namespace kforge
