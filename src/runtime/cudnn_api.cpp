#include "runtime/cudnn_api.h"

#include <string>

#include "runtime/load_once.h"

namespace kforge {

namespace {

Cudnn load() {
  void* lib = open_toolkit_library("libcudnn.so." + std::to_string(CUDNN_MAJOR), "libcudnn.so",
                                   "plans with convolutions need cuDNN " + std::to_string(CUDNN_MAJOR) +
                                       " on the library path (the toolkit's, or the nvidia-cudnn wheel's)");
  Cudnn c;
#define KF_CUDNN_FN(name) resolve(lib, c.name, #name, "libcudnn", "install cuDNN " + std::to_string(CUDNN_MAJOR));
#include "runtime/cudnn_functions.inc"
#undef KF_CUDNN_FN
  return c;
}

}  // namespace

const Cudnn& cudnn() { return load_once<Cudnn, load>(); }

}  // namespace kforge
