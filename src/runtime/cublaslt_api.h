// cuBLASLt, opened at run time with dlopen. The library is half a gigabyte: linked, it cost every kforge
// process ~80 ms and ~210 MB of resident memory at start (measured here: `kforge --help` 0.09 s / 260 MB
// against 0.01 s / 50 MB), which each fresh sandboxed evaluation paid whether or not its plan multiplies
// matrices. Now only a plan with a cuBLASLt step loads it.
#pragma once
#include <cublasLt.h>

namespace kforge {

struct CublasLt {
#define KF_CUBLASLT_FN(name) decltype(&::name) name = nullptr;
#include "runtime/cublaslt_functions.inc"
#undef KF_CUBLASLT_FN
};

// Loads libcublasLt (once); throws UserError naming what is missing.
const CublasLt& cublaslt();

}  // namespace kforge
