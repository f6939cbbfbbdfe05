// cuDNN, opened at run time with dlopen, for the reason cuBLASLt is (cublaslt_api.h): linked, every kforge
// process would pay for loading it at start whether or not its plan has a convolution. libcudnn.so.9 is a
// small shim that itself loads the graph and engine sub-libraries on first use.
#pragma once
#include <cudnn.h>

namespace kforge {

struct Cudnn {
#define KF_CUDNN_FN(name) decltype(&::name) name = nullptr;
#include "runtime/cudnn_functions.inc"
#undef KF_CUDNN_FN
};

// Loads libcudnn (once); throws UserError naming what is missing.
const Cudnn& cudnn();

}  // namespace kforge
