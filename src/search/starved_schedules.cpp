#include "search/starved_schedules.h"

#include "ir/types.h"
#include "runtime/target.h"

namespace kforge {

GpuFacts GpuFacts::of_this_machine() {
  const Target& t = Target::here();
  return t.measured ? GpuFacts{double(t.sms), double(t.l2_bytes)} : GpuFacts{};
}

bool starves_memory(const KernelGroup& g, const KernelSchedule& ks, const GpuFacts& gpu) {
  const double kSMs = gpu.sms, kMinThreads = gpu.sms * 512, kL2Bytes = gpu.l2_bytes;
  if (double(numel(g.shape)) * 4 <= kL2Bytes || is_library_kind(g.kind)) return false;  // the library's geometry
  auto [threads, blocks] = launch_size(g, ks);
  // A thread of `vec` columns has vec loads' bytes in flight (a flat thread's vec is in its count already).
  const double loads = ks.strategy == Strategy::thread ? threads * ks.vec : threads;
  if (blocks < kSMs || loads < kMinThreads) return true;
  // A split's chunk must give each of its threads a step at least (a vector walk's step is vec elements).
  if (ks.strategy == Strategy::split && row_length(g) / (int64_t(ks.chunks) * ks.vec) < ks.block) return true;
  if (!keeps_innermost(g)) return false;
  // A split's blocks walk a slice of one strided row (19_amax_first_dim: five split candidates past the 250 ms
  // limit, against 0.90 ms for a thread per four columns; 17_sum_middle_dim: 15 ms).
  if (ks.strategy == Strategy::split) return true;
  bool row_per_warp_or_block = ks.strategy == Strategy::warp || ks.strategy == Strategy::block;
  return (g.kind == GroupKind::row && row_per_warp_or_block) || (g.kind == GroupKind::scan && ks.strategy == Strategy::block);
}

}  // namespace kforge
