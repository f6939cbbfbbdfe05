// A job's sandbox shows its own GPU alone (env/gpu_device.h): with that GPU's device node the driver finds it,
// and without it the driver finds none, whatever CUDA_VISIBLE_DEVICES says. The kernel enforces the missing node.
#include <gtest/gtest.h>

#include "env/gpu_device.h"
#include "env/sandbox.h"
#include "runtime/driver.h"

namespace kforge {
namespace {

// cuInit's result and the driver's device count, as the sandboxed process sees them.
std::string devices_seen(const SandboxOptions& o) {
  const char* probe =
      "import ctypes; c = ctypes.CDLL('libcuda.so.1'); n = ctypes.c_int(-1); r = c.cuInit(0);"
      "c.cuDeviceGetCount(ctypes.byref(n)) if r == 0 else None; print(r, n.value)";
  SandboxResult r = run_sandboxed({"python3", "-c", probe}, o);
  EXPECT_TRUE(r.ok()) << r.cause() << r.err;
  return r.out;
}

TEST(GpuSandbox, AJobFindsItsOwnGpuAndNoOther) {
  if (!driver_available()) GTEST_SKIP() << "no GPU";
  SandboxOptions o;
  o.gpu = true;
  o.timeout_s = 60;
  o.memory_bytes = 0;
  o.uid = getuid();  // the probe needs no other user; the sandbox's own tests cover the drop
  show_only(o, gpu_device(0));
  EXPECT_EQ(devices_seen(o), "0 1\n");
  o.gpu_nodes.pop_back();  // the GPU's own node gone: the control nodes alone reach no GPU
  EXPECT_NE(devices_seen(o), "0 1\n");
}

}  // namespace
}  // namespace kforge
