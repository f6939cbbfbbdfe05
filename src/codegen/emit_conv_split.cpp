// A convolution in fp16x3 (split precision on fp16 tensor cores through cuDNN): the channels-last transposes into
// the step write each operand as three scaled fp16 parts along the convolution's reduction, so that one cuDNN
// convolution over three times the channels adds x_hi w_hi + x_hi w_lo + x_lo w_hi (the products' fp16x3 split,
// emit_matmul_split.cpp, along a convolution's sum over C / groups x taps instead of K).
//   forward: x [n][c][s] -> [n][s][3c], each group's c / groups channels as [hi | hi | lo];
//            w [o][c / groups][taps] -> [o][taps][3 c / groups] as [hi | lo | hi]: the step is a convolution of
//            3c input channels in the same groups;
//   transposed (backward data, whose sum runs over the forward's output channels o / groups x taps):
//            x (the forward's output) [n][o][s] -> [n][s][3o] as [hi | hi | lo] per group;
//            w [o][c / groups][taps] -> [3o][taps][c / groups], each group's rows as [hi | lo | hi].
// Both operands are scaled by powers of two (emit_half_absmax's partials, folded by every block) that put their
// largest magnitude in fp16's range; the x transpose also writes 2^-(ex + ew), which the transpose back applies
// to the step's fp32 result (exact: a power of two).
#include <algorithm>

#include "codegen/emitters.h"

namespace kforge {

PlanKernel emit_split_transpose(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, int src, int dst,
                                const HalfScales& h, const std::string& which, int64_t A, int64_t B, int64_t C, int64_t group,
                                bool along_a, const std::vector<std::string>& parts, int scale) {
  const auto I = i64_literal;
  const int64_t n = int64_t(parts.size());
  const int64_t out_b = along_a ? B : n * B;  // the destination's row length (channels)
  // Where part p of element (a, b) goes: its row a' and channel b'.
  auto tripled = [&](const std::string& v) {
    return "(" + v + " / " + I(group) + " * " + I(n * group) + " + p * " + I(group) + " + " + v + " % " + I(group) + ")";
  };
  const std::string row = along_a ? tripled("a") : "a", channel = along_a ? "b" : tripled("b");
  std::string s = "// kforge kernel " + name + ": channels-last fp16x3 parts for conv group '" + g.key + "', [" +
                  std::to_string(A) + "][" + std::to_string(B) + "][" + std::to_string(C) + "] -> " +
                  (along_a ? "[3a][c][b]" : "[a][c][3b]") + " in groups of " + std::to_string(group) + "\n";
  s += "extern \"C\" __global__ void __launch_bounds__(256) " + name +
       "(const float* __restrict__ src, const float* __restrict__ partial, unsigned short* __restrict__ dst" +
       (scale >= 0 ? ", float* __restrict__ undo" : "") + ") {\n";
  s += half_scales_code(h);
  if (scale >= 0) s += "  if (blockIdx.x == 0 && threadIdx.x == 0) undo[0] = ldexpf(1.f, -(ea + eb));\n";
  s += "  const float scale = ldexpf(1.f, " + which + ");\n";
  const bool lo = std::find(parts.begin(), parts.end(), "lo") != parts.end();
  std::string store = half_parts_code("x", lo, "        ");
  for (int64_t p = 0; p < n; ++p)
    store += "        { const int p = " + std::to_string(p) + "; dst[" + row + " * " + I(C * out_b) + " + c * " + I(out_b) + " + " +
             channel + "] = " + parts[size_t(p)] + "; }\n";
  s += tiled_transpose(A, B, C, "v * scale", store) + "}\n";
  // A grid of at most 8 blocks per SM: every block folds all the partials first.
  std::vector<int> args = {src, h.partial, dst};
  if (scale >= 0) args.push_back(scale);
  return generated_kernel(g, ks, name, s, args, std::clamp<int64_t>(tiled_transpose_blocks(A, B, C), 1, 8 * int64_t(g.target.sms)), 256);
}

}  // namespace kforge
