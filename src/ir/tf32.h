#pragma once
// TF32 arithmetic on the CPU, as the tensor cores do it: the emulation that pins what the split-precision
// (tf32x3) GEMM of codegen/emit_matmul_mma.cpp computes, and why it may claim the strict tier when one TF32
// product may not. Header-only: a few bit operations.
#include <bit>
#include <cmath>
#include <cstdint>

namespace kforge {

// cvt.rna.tf32.f32: round to the nearest value with 10 explicit mantissa bits, ties away from zero (adding half
// of the 13 dropped bits to the magnitude, then dropping them); infinities and NaN pass through.
inline float round_to_tf32(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  return std::bit_cast<float>((u + 0x1000u) & 0xffffe000u);
}

// x = big + small (up to 2^-22 of x): both TF32 values, so each product of two parts is exact in fp32. Where
// big is not finite (x infinite, or rounded up past the largest float) small is 0, not inf - inf = NaN. (An
// infinite input still meets a zero small part of the other operand, inf * 0: split precision turns infinite
// inputs into NaN results, which the verifier rejects on tasks whose inputs hold infinities.)
struct Tf32Split {
  float big, small;
};
inline Tf32Split split_tf32(float x) {
  float big = round_to_tf32(x);
  return {big, std::isfinite(big) ? round_to_tf32(x - big) : 0.f};
}

// What one thread of the kernel computes for one output: an fp32 accumulator that each mma.sync m16n8k8 adds
// 8 products to at once (the tensor core sums them, products exact, and rounds into the accumulator once;
// emulated as an exact sum rounded once). Plain TF32 issues big*big; split precision issues small*big, then
// big*small, then big*big (small*small, below fp32's resolution, is dropped). b is read with stride b_stride.
inline float tf32_dot(const float* a, const float* b, int64_t k, int64_t b_stride, bool split) {
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < k; k0 += 8) {
    double small_big = 0, big_small = 0, big_big = 0;
    for (int64_t i = k0; i < k0 + 8 && i < k; ++i) {
      Tf32Split x = split_tf32(a[i]), y = split_tf32(b[i * b_stride]);
      small_big += double(x.small) * y.big;
      big_small += double(x.big) * y.small;
      big_big += double(x.big) * y.big;
    }
    if (split) {
      acc = float(acc + small_big);
      acc = float(acc + big_small);
    }
    acc = float(acc + big_big);
  }
  return acc;
}

}  // namespace kforge
