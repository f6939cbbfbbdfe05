// Schedules the local search leaves out of a kernel group's space because they cannot keep HBM busy, judged
// with the GPU's own facts (its SMs and L2), measured where a driver is, an H100's otherwise.
#pragma once
#include "codegen/schedule.h"

namespace kforge {

struct GpuFacts {
  double sms = 132;                      // H100 SXM / H200: the rules below were measured there
  double l2_bytes = 64.0 * (1 << 20);
  static GpuFacts of_this_machine();     // device 0's, once; the defaults without a usable GPU
};

// Whether `ks` cannot keep HBM busy on a group that moves more than L2 holds, so that the local search does
// not spend candidates on it. Every rule comes from measured candidates:
//   - too little launched: fewer blocks than SMs, or too few threads for ~32 KB in flight per SM
//     (a thread per LayerNorm row 12 ms against 1.4; 96 BatchNorm blocks 2.2-8.8 ms against 1.3);
//   - idle threads: split chunks shorter than the block (sum over 4093 in 128 chunks: 12-164 ms against 0.94);
//   - strided rows: a warp or block per row, or a split of one, when the innermost dim is kept, and a block per
//     scan line along a middle dim (1.7-15 ms against ~1 for tile/thread on 17/19/20/21/23; cumprod 8-11 ms
//     against 0.92; splits on 19 past the 250 ms limit).
bool starves_memory(const KernelGroup& g, const KernelSchedule& ks, const GpuFacts& gpu = GpuFacts::of_this_machine());

}  // namespace kforge
