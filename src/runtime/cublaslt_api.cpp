#include "runtime/cublaslt_api.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <mutex>
#include <string>

#include "ir/error.h"
#include "runtime/load_once.h"

namespace kforge {

namespace {

// The folder of the NVRTC kforge is linked with: the same toolkit's libcublasLt lies beside it.
std::string nvrtc_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  return path.substr(0, path.rfind('/') + 1);
}

CublasLt load() {
  // The soname of the toolkit kforge was built with (the loader's search path, then NVRTC's folder), then any.
  std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen((nvrtc_folder() + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw UserError("cuBLASLt could not be loaded (" + soname + ": " + std::string(dlerror()) +
                    "); plans with matrix products need the CUDA toolkit's libcublasLt on the library path");
  CublasLt c;
#define KF_CUBLASLT_FN(name)                                                         \
  c.name = reinterpret_cast<decltype(c.name)>(dlsym(lib, #name));                     \
  if (!c.name) throw UserError(std::string("libcublasLt lacks ") + #name + "; update the CUDA toolkit");
#include "runtime/cublaslt_functions.inc"
#undef KF_CUBLASLT_FN
  return c;
}

}  // namespace

const CublasLt& cublaslt() { return load_once<CublasLt, load>(); }

}  // namespace kforge
