#include "search/starved_schedules.h"

#include "ir/types.h"
#include "runtime/driver.h"

namespace kforge {

GpuFacts GpuFacts::of_this_machine() {
  static const GpuFacts facts = [] {
    GpuFacts f;
    if (!driver_available()) return f;
    try {
      ensure_context(0);
      CUdevice dev;
      KF_CU(driver().cuDeviceGet(&dev, 0));
      int sms = 0, l2 = 0;
      KF_CU(driver().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
      KF_CU(driver().cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
      if (sms > 0) f.sms = sms;
      if (l2 > 0) f.l2_bytes = l2;
    } catch (const std::exception&) {  // a driver without a usable GPU: the defaults
    }
    return f;
  }();
  return facts;
}

bool starves_memory(const KernelGroup& g, const KernelSchedule& ks, const GpuFacts& gpu) {
  const double kSMs = gpu.sms, kMinThreads = gpu.sms * 512, kL2Bytes = gpu.l2_bytes;
  if (double(numel(g.shape)) * 4 <= kL2Bytes || is_library_kind(g.kind)) return false;  // the library's geometry
  auto [threads, blocks] = launch_size(g, ks);
  // A thread of `vec` columns has vec loads' bytes in flight (a flat thread's vec is in its count already).
  const double loads = ks.strategy == Strategy::thread ? threads * ks.vec : threads;
  if (blocks < kSMs || loads < kMinThreads) return true;
  if (ks.strategy == Strategy::split && row_length(g) / ks.chunks < ks.block) return true;
  if (!keeps_innermost(g)) return false;
  // A split's blocks walk a slice of one strided row (device run 8.1, 19_amax_first_dim: five split candidates
  // past the 250 ms limit, against 0.90 ms for a thread per four columns; run 7.2, 17_sum_middle_dim: 15 ms).
  if (ks.strategy == Strategy::split) return true;
  bool row_per_warp_or_block = ks.strategy == Strategy::warp || ks.strategy == Strategy::block;
  return (g.kind == GroupKind::row && row_per_warp_or_block) || (g.kind == GroupKind::scan && ks.strategy == Strategy::block);
}

}  // namespace kforge
