#pragma once
// TF32 arithmetic on the CPU, as the tensor cores do it: the emulation that pins what the split-precision
// (tf32x3) GEMM of codegen/emit_matmul_mma.cpp computes, and why it may claim the strict tier when one TF32
// product may not. Header-only: a few bit operations.
#include <algorithm>
#include <bit>
#include <climits>
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

// x = big + small (up to 2^-22 of x): both TF32 values, so each product of two parts is exact in fp32. As the
// kernel splits: big is Veltkamp's split of x into 11 + 13 significant bits (x rounded to nearest at 11 bits,
// computed as c = x (2^13 + 1), big = c - (c - x), each operation rounded: no fused multiply-add on this path, as
// x86-64's baseline has none), small = x - big rounded to TF32. NaN, infinite and |x| > 4e34 (where c
// overflows) give a NaN big part: split precision turns such inputs into NaN results, which the verifier
// rejects on tasks whose inputs hold them.
struct Tf32Split {
  float big, small;
};
inline Tf32Split split_tf32(float x) {
  volatile float c = x * 8193.f;  // volatile: each step rounded to float, as the kernel's _rn intrinsics
  volatile float d = c - x;
  float big = c - d;
  return {big, round_to_tf32(x - big)};
}

// One mma.sync's sum as the tensor core forms it (the shape of the model is Fasi, Higham, Mikaitis and Pranesh,
// "Numerical behavior of NVIDIA tensor cores", 2021): the products are exact; every addend, the accumulator
// included, is aligned to the largest one's exponent and cut to kTensorCoreSumBits significant bits there,
// truncated rather than rounded; the sum is normalised toward zero. The width is fitted to the H200:
// the first split-precision kernel, which summed into its running accumulator, put 8.3% of a 4096^3 product's
// elements outside 1e-4 of the fp32 reference; this model with 21 bits puts 8 to 11% there, with 24 bits 0.5%.
constexpr int kTensorCoreSumBits = 21;
inline float tensor_core_sum(float c, const double* products, int n) {
  double raw = c;
  for (int i = 0; i < n; ++i) raw += products[i];
  if (!std::isfinite(raw)) return float(raw);  // inf and NaN propagate as in any sum
  int emax = c != 0.f ? std::ilogb(c) : INT_MIN;
  for (int i = 0; i < n; ++i)
    if (products[i] != 0) emax = std::max(emax, std::ilogb(products[i]));
  if (emax == INT_MIN) return 0.f;
  const double quantum = std::ldexp(1.0, emax - (kTensorCoreSumBits - 1));
  double sum = std::trunc(double(c) / quantum) * quantum;  // exact: a few addends of 21 bits
  for (int i = 0; i < n; ++i) sum += std::trunc(products[i] / quantum) * quantum;
  float f = float(sum);
  if (std::fabs(double(f)) > std::fabs(sum)) f = std::nextafter(f, 0.f);
  return f;
}

// The products of one mma.sync m16n8k8 step (8 pairs from k0; fewer past k, the rest 0), exact in double:
// small*big, big*small and big*big of the split operands. b is read with stride b_stride.
struct Tf32StepProducts {
  double small_big[8] = {}, big_small[8] = {}, big_big[8] = {};
};
inline Tf32StepProducts tf32_step_products(const float* a, const float* b, int64_t k0, int64_t k, int64_t b_stride) {
  Tf32StepProducts p;
  for (int64_t i = k0; i < k0 + 8 && i < k; ++i) {
    Tf32Split x = split_tf32(a[i]), y = split_tf32(b[i * b_stride]);
    p.small_big[i - k0] = double(x.small) * y.big;
    p.big_small[i - k0] = double(x.big) * y.small;
    p.big_big[i - k0] = double(x.big) * y.big;
  }
  return p;
}

// What one thread of the kernel computes for one output, one mma.sync step (8 products) at a time. Plain TF32
// adds big*big into the fp32 accumulator inside the tensor core. Split precision sums small*big, big*small and
// big*big of a K slab's two steps in a fresh register (six tensor-core sums, the small terms first, while that
// register is small), then adds that to the accumulator with an ordinary fp32 add, rounded to nearest: inside
// the tensor core the accumulator would cut every step's addends at its own, far larger, exponent. small*small, below fp32's
// resolution, is dropped. What remains is each sum's own truncation, about 2^-20 of its largest addend: at
// K = 1024 split precision stays inside the strict tier, at K = 4096 a few elements in ten thousand may land
// outside it (tests/ir/test_tf32.cpp).
constexpr int kMmaStepsPerSum = 2;  // codegen/emit_matmul_mma.cpp: a 16-deep K slab
inline float tf32_dot(const float* a, const float* b, int64_t k, int64_t b_stride, bool split) {
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < k; k0 += 8 * kMmaStepsPerSum) {
    Tf32StepProducts p[kMmaStepsPerSum];
    for (int h = 0; h < kMmaStepsPerSum; ++h) p[h] = tf32_step_products(a, b, k0 + 8 * h, k, b_stride);
    if (!split) {
      for (auto& step : p) acc = tensor_core_sum(acc, step.big_big, 8);
      continue;
    }
    float sum = 0.f;  // the small terms first, while the sum is small
    for (auto& step : p) sum = tensor_core_sum(tensor_core_sum(sum, step.small_big, 8), step.big_small, 8);
    for (auto& step : p) sum = tensor_core_sum(sum, step.big_big, 8);
    acc += sum;
  }
  return acc;
}

}  // namespace kforge
