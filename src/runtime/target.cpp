#include "runtime/target.h"

#include "runtime/driver.h"

namespace kforge {

Target Target::of_device(int ordinal) {
  const Driver& d = driver();
  CUdevice dev;
  KF_CU(d.cuDeviceGet(&dev, ordinal));
  auto attribute = [&](CUdevice_attribute a) {
    int v = 0;
    KF_CU(d.cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  Target t;
  char name[256] = {0};
  KF_CU(d.cuDeviceGetName(name, sizeof name, dev));
  t.name = name;
  t.major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  t.minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  t.sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  t.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  t.smem_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  t.smem_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  t.measured = true;
  return t;
}

const Target& Target::here() {
  static const Target target = [] {
    if (!driver_available()) return Target{};
    try {
      return of_device(0);
    } catch (const std::exception&) {  // a driver without a usable GPU
      return Target{};
    }
  }();
  return target;
}

}  // namespace kforge
