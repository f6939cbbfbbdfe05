#include "runtime/cublaslt_api.h"

#include <string>

#include "runtime/load_once.h"

namespace kforge {

namespace {

CublasLt load() {
  // The soname of the toolkit kforge was built with (the loader's search path, then NVRTC's folder), then any.
  void* lib = open_toolkit_library("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "libcublasLt.so",
                                   "plans with matrix products need the CUDA toolkit's libcublasLt on the library path");
  CublasLt c;
#define KF_CUBLASLT_FN(name) resolve(lib, c.name, #name, "libcublasLt", "update the CUDA toolkit");
#include "runtime/cublaslt_functions.inc"
#undef KF_CUBLASLT_FN
  return c;
}

}  // namespace

const CublasLt& cublaslt() { return load_once<CublasLt, load>(); }

}  // namespace kforge
