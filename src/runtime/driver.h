// The CUDA driver API, opened at run time with dlopen. kforge links no libcuda, so the same binary
// builds and runs its GPU-free commands and tests on machines without a GPU or driver; the first call
// that needs the GPU loads the driver and says clearly when there is none.
#pragma once
#include <cuda.h>

#include <string>

namespace kforge {

struct Driver {
#define KF_DRIVER_FN(name) decltype(&::name) name = nullptr;
#include "runtime/driver_functions.inc"
#undef KF_DRIVER_FN
};

// Loads libcuda.so.1 and initializes it (once); throws UserError when no driver or GPU is available.
const Driver& driver();
bool driver_available();

// Throws a UserError naming the call, file:line and the driver's error text.
void check_cu(CUresult r, const char* call, const char* file, int line);
#define KF_CU(call) ::kforge::check_cu((call), #call, __FILE__, __LINE__)

// Makes the device's primary context current on this thread (the one PyTorch uses) and returns it.
CUcontext ensure_context(int device = 0);
std::string device_name(int device = 0);

}  // namespace kforge
