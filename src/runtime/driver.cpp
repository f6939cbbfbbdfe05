#include "runtime/driver.h"

#include <dlfcn.h>

#include <mutex>

#include "ir/error.h"
#include "runtime/load_once.h"

namespace kforge {

namespace {

// The symbol each entry point has in libcuda (cuda.h renames some with macros to _v2 / _v3 / _ptsz).
#define KF_STR2(x) #x
#define KF_STR(x) KF_STR2(x)

Driver load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw UserError("no CUDA driver: libcuda.so.1 could not be loaded (" + std::string(dlerror()) +
                    "); GPU commands need a machine with an NVIDIA GPU and driver");
  Driver d;
#define KF_DRIVER_FN(name)                                                                          \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, KF_STR(name)));                           \
  if (!d.name) throw UserError(std::string("CUDA driver lacks ") + KF_STR(name) + "; update the driver");
#include "runtime/driver_functions.inc"
#undef KF_DRIVER_FN
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    d.cuGetErrorString(r, &s);
    throw UserError(std::string("cuInit failed: ") + (s ? s : "unknown error") + " (is a GPU visible?)");
  }
  return d;
}

}  // namespace

const Driver& driver() { return load_once<Driver, load>(); }

bool driver_available() {
  try {
    driver();
    return true;
  } catch (const UserError&) {
    return false;
  }
}

void check_cu(CUresult r, const char* call, const char* file, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* s = nullptr;
  driver().cuGetErrorString(r, &s);
  throw UserError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  (s ? s : "unknown error") + " (CUresult " + std::to_string(int(r)) + ")");
}

CUcontext ensure_context(int device) {
  const Driver& d = driver();
  CUcontext ctx = nullptr;
  KF_CU(d.cuCtxGetCurrent(&ctx));
  if (ctx) return ctx;
  CUdevice dev;
  KF_CU(d.cuDeviceGet(&dev, device));
  KF_CU(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  KF_CU(d.cuCtxSetCurrent(ctx));
  return ctx;
}

std::string device_name(int device) {
  ensure_context(device);
  CUdevice dev;
  KF_CU(driver().cuDeviceGet(&dev, device));
  char name[256] = {0};
  KF_CU(driver().cuDeviceGetName(name, sizeof name, dev));
  return name;
}

}  // namespace kforge
