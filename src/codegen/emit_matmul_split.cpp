// A cuBLASLt product on 16-bit copies of its operands (precision fp16 or fp16x3), made by two generated kernels
// before the library step:
//   <name>_absmax: each operand's largest magnitude, as per-block partial maxima (no atomics, no zeroing);
//   <name>_split:  each block folds those partials into the operands' scales (a power of two 2^e that puts the
//                  largest magnitude in [2^14, 2^15): fp16's range with room to spare, and exact to apply), then
//                  writes the scaled operand's parts along the reduction dim, each padded with zeros to Kp = K
//                  rounded up to 8 (16-byte rows for the library; zeros add nothing), a stored row of the copy to
//                  a multiple of 8 elements. fp16: one part, hi = fp16(x 2^e). fp16x3: three, A' = [hi | hi | lo]
//                  and B' = [hi ; lo ; hi] with lo = fp16(x 2^e - hi), so that one product over k = 3 Kp adds
//                  A_hi B_hi + A_hi B_lo + A_lo B_hi (tf32x3's split on fp16 tensor cores, which run at twice TF32's
//                  rate; the lo*lo term, ~2^-22 of a product, is dropped).
//                  Block 0 also writes the library step's alpha = 2^-(ea + eb), beta = 0, and beta = 1 for
//                  the pieces of a cut reduction that add to the result (device pointers; emit_matmul.cpp).
// The library step then reads the copies ("dtype" f16 operands), sums in fp32 and writes the fp32 result with its
// epilogue (alpha applies before the bias: cuBLASLt's D = act(alpha A B + bias)).
// Accuracy, measured: within 1e-4 of the exact result on the level-2 linear chains (K 1024-4096 at unit scale), but ~1%
// of the elements of a K = 3077 product lie outside 1e-4, and a few outside 1e-2 on inputs four times larger: the
// tensor cores' sums truncate. Summing the corrections in a second step (K additions long instead of 3K) changed
// neither count and cost a pass over the result (12_tall_skinny 1.28 -> 3.47 ms), so the three parts share one product.
// The check decides the tier on every input set.
// Why scale: fp16 overflows at 65504 and loses relative precision below 2^-14; scaled, an operand of any
// finite magnitude from ~2^-48 to ~2^78 keeps 22 significant bits in hi + lo (elements 2^28 below the largest
// lose them gradually to fp16's subnormals: an absolute error of ~2^-39 of the largest). The scale comes from
// the finite elements; an infinite one stays inf (its lo part 0) and NaN stays NaN, as in fp32 arithmetic.
#include <algorithm>

#include "codegen/emitters.h"
#include "ir/error.h"

namespace kforge {

namespace {

constexpr int kThreads = 256;
int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// One operand as the library reads it and as its copy is stored. The stored matrix is rows x cols (row-major;
// `count` of them at `batch_stride`, 0: one matrix for every batch entry); the reduction dim K runs along its
// columns (k_cols) or its rows.
struct SplitOperand {
  int64_t rows = 0, cols = 0, count = 1;
  bool k_cols = true;
  int64_t k = 0, kp = 0;  // K and its padded length
  // The copy: stored rows x ld, parts of Kp along the reduction dim.
  int64_t copy_rows = 0, copy_ld = 0;
  int64_t elements() const { return count * rows * cols; }                      // of the stored operand
  int64_t padded() const { return count * (k_cols ? rows * kp : kp * cols); }  // elements the split walks
  int64_t copy_elements() const { return count * copy_rows * copy_ld; }
};

// `m` is the operand's JSON (emit_matmul.cpp's operand()), read as read_rows x read_cols; K is the read matrix's
// columns for the first operand (A, m x k) and its rows for the second (B, k x n).
SplitOperand describe(const nlohmann::json& m, int64_t read_rows, int64_t read_cols, bool first, int64_t batch, int parts) {
  SplitOperand o;
  const bool t = m.value("transposed", false);
  o.rows = t ? read_cols : read_rows;
  o.cols = t ? read_rows : read_cols;
  o.count = m.at("batch_stride").get<int64_t>() == 0 ? 1 : batch;
  // A's K is its read columns: the stored columns unless transposed. B's K is its read rows: the stored rows
  // unless transposed.
  o.k_cols = first != t;
  o.k = o.k_cols ? o.cols : o.rows;
  o.kp = round_up(o.k, 8);
  o.copy_rows = o.k_cols ? o.rows : parts * o.kp;
  o.copy_ld = o.k_cols ? parts * o.kp : round_up(o.cols, 8);
  return o;
}

// "A: 64 x 3 x 104 f16 (K 100 along columns)": the copy's shape, for the kernel's opening comment.
std::string layout_text(const SplitOperand& o, const std::string& what) {
  return what + ": " + std::to_string(o.count) + " x " + std::to_string(o.copy_rows) + " x " + std::to_string(o.copy_ld) +
         " f16 (K " + std::to_string(o.k) + " along " + (o.k_cols ? "columns" : "rows") + ", parts of " + std::to_string(o.kp) + ")";
}

nlohmann::json copy_json(const SplitOperand& o, const nlohmann::json& m) {
  return {{"transposed", m.value("transposed", false)}, {"ld", o.copy_ld},
          {"batch_stride", o.count == 1 ? 0 : o.copy_rows * o.copy_ld}, {"dtype", "f16"}};
}

// The blocks a walk of n elements gets: about four elements a thread, at most `cap` blocks (grid-stride). The
// largest-magnitude walk's blocks are capped lower: every block of the split kernel folds all their partials.
int64_t walk_blocks(int64_t n, int64_t cap = 4096) { return std::clamp<int64_t>((n + 4 * kThreads - 1) / (4 * kThreads), 1, cap); }
constexpr int64_t kMaxPartials = 1024;

// Statements folding `v` to the block's maximum in shared array `red` (every thread gets it). A tree in shared
// memory rather than the prelude's kf_block_reduce (warp shuffles): the CPU runner, which the copies' tests
// run these kernels on, has no warps.
std::string block_max(const std::string& v) {
  return "  red[threadIdx.x] = " + v + ";\n  __syncthreads();\n"
         "  for (int s = " + std::to_string(kThreads / 2) + "; s > 0; s >>= 1) {\n"
         "    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);\n"
         "    __syncthreads();\n  }\n  " + v + " = red[0];\n  __syncthreads();\n";
}

// The walk of one operand inside the split kernel: element i of the padded source (zeros past K) scaled and
// written as its parts, `parts` naming each in order along the reduction dim ("hi" or "lo").
std::string split_walk(const SplitOperand& o, const std::string& src, const std::string& dst, const std::string& scale,
                       const std::string& first_block, int64_t blocks, const std::vector<std::string>& parts) {
  const auto I = i64_literal;
  const int64_t pr = o.k_cols ? o.rows : o.kp, pc = o.k_cols ? o.kp : o.cols;  // the padded source's extents
  std::string s = "    for (i64 i = (i64)(blockIdx.x - " + first_block + ") * " + std::to_string(kThreads) + " + threadIdx.x; i < " +
                  I(o.padded()) + "; i += " + I(blocks * kThreads) + ") {\n";
  s += "      const i64 c = i % " + I(pc) + ", r = i / " + I(pc) + " % " + I(pr) + ", m = i / " + I(pr * pc) + ";\n";
  s += "      const float x = " + std::string(o.k_cols ? "c" : "r") + " < " + I(o.k) + " ? " + src + "[m * " + I(o.rows * o.cols) +
       " + r * " + I(o.cols) + " + c] * " + scale + " : 0.f;\n";
  const bool lo = std::find(parts.begin(), parts.end(), "lo") != parts.end();
  s += half_parts_code("x", lo, "      ");
  s += "      unsigned short* d = " + dst + " + m * " + I(o.copy_rows * o.copy_ld) + ";\n";
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string at = o.k_cols ? "r * " + I(o.copy_ld) + " + " + I(int64_t(p) * o.kp) + " + c"
                                    : "(" + I(int64_t(p) * o.kp) + " + r) * " + I(o.copy_ld) + " + c";
    s += "      d[" + at + "] = " + parts[p] + ";\n";
  }
  return s + "    }\n";
}

}  // namespace

HalfScales emit_half_absmax(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name,
                            int a, int64_t na, int b, int64_t nb, int64_t max_partials) {
  const auto I = i64_literal;
  HalfScales h;
  h.blocks_a = walk_blocks(na, max_partials);
  h.blocks_b = walk_blocks(nb, max_partials);
  const int64_t pa = h.blocks_a, pb = h.blocks_b;
  h.partial = add_temp(cx, g.key + ".absmax", DType::f32, {pa + pb});
  std::string s = "// kforge kernel " + name + "_absmax: the largest finite magnitude of each of two operands of group '" +
                  g.key + "' (" + std::to_string(pa) + " + " + std::to_string(pb) + " block partials)\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + name +
       "_absmax(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ partial) {\n";
  s += "  __shared__ float red[" + std::to_string(kThreads) + "];\n";
  s += "  if (blockIdx.x >= " + I(pa + pb) + ") return;  // a whole block: no barrier is left waiting\n";
  s += "  const bool is_a = blockIdx.x < " + I(pa) + ";\n";
  s += "  const float* src = is_a ? a : b;\n  const i64 n = is_a ? " + I(na) + " : " + I(nb) + ", blocks = is_a ? " + I(pa) +
       " : " + I(pb) + ";\n";
  s += "  float v = 0.f;  // finite magnitudes only: NaN and inf elements stay NaN and inf in their copies\n";
  s += "  for (i64 i = (i64)(is_a ? blockIdx.x : blockIdx.x - " + I(pa) + ") * " + std::to_string(kThreads) +
       " + threadIdx.x; i < n; i += blocks * " + std::to_string(kThreads) + ") {\n"
       "    const float x = fabsf(src[i]);\n    if (x <= 3.402823466e38f) v = fmaxf(v, x);\n  }\n";
  s += block_max("v");
  s += "  if (threadIdx.x == 0) partial[blockIdx.x] = v;\n}\n";
  h.absmax = generated_kernel(g, ks, name + "_absmax", s, {a, b, h.partial}, pa + pb, kThreads);
  return h;
}

std::string half_scales_code(const HalfScales& h) {
  const auto I = i64_literal;
  std::string s = "  __shared__ float red[" + std::to_string(kThreads) + "];\n";
  s += "  float ma = 0.f, mb = 0.f;\n";
  s += "  for (int i = threadIdx.x; i < " + I(h.blocks_a) + "; i += " + std::to_string(kThreads) + ") ma = fmaxf(ma, partial[i]);\n";
  s += "  for (int i = threadIdx.x; i < " + I(h.blocks_b) + "; i += " + std::to_string(kThreads) + ") mb = fmaxf(mb, partial[" +
       I(h.blocks_a) + " + i]);\n";
  s += block_max("ma") + block_max("mb");
  s += "  const int ea = kf_half_scale(ma), eb = kf_half_scale(mb);\n";
  return s;
}

std::string half_parts_code(const std::string& x, bool lo, const std::string& indent) {
  std::string s = indent + "const unsigned short hi = kf_to_f16(" + x + ");\n";
  if (lo)
    s += indent + "const float h = kf_from_f16(hi);\n" + indent +
         "const unsigned short lo = isinf(h) ? (unsigned short)0 : kf_to_f16(" + x + " - h);  // the exact residual, rounded once\n";
  return s;
}

std::vector<PlanKernel> emit_matmul_split(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, PlanKernel step,
                                          const MatmulDims& d, int64_t batch) {
  const auto I = i64_literal;
  const bool split = ks.precision == Precision::fp16x3;
  const int parts = split ? 3 : 1;
  const std::string& name = step.name;
  nlohmann::json& lib = step.library;
  const SplitOperand a = describe(lib.at("a"), d.m, d.k, true, batch, parts), b = describe(lib.at("b"), d.k, d.n, false, batch, parts);
  const int src_a = step.args[0], src_b = step.args[1];
  const int a16 = add_temp(cx, g.key + ".a_f16", DType::f16, {a.copy_elements()});
  const int b16 = add_temp(cx, g.key + ".b_f16", DType::f16, {b.copy_elements()});
  const HalfScales scales = emit_half_absmax(cx, g, ks, name, src_a, a.elements(), src_b, b.elements(), kMaxPartials);
  const int alpha = add_temp(cx, g.key + ".alpha", DType::f32, {3});

  const int64_t ga = walk_blocks(a.padded()), gb = walk_blocks(b.padded());
  std::string s = "// kforge kernel " + name + "_split: " + (split ? "hi/lo fp16 parts" : "fp16 copies") +
                  " of the scaled operands of product group '" + g.key + "' (" + layout_text(a, "A") + "; " +
                  layout_text(b, "B") + ")\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + name +
       "_split(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ partial, "
       "unsigned short* __restrict__ a16, unsigned short* __restrict__ b16, float* __restrict__ alpha) {\n";
  s += half_scales_code(scales);
  s += "  if (blockIdx.x == 0 && threadIdx.x == 0) alpha[0] = ldexpf(1.f, -(ea + eb)), alpha[1] = 0.f, alpha[2] = 1.f;\n";
  s += "  const float sa = ldexpf(1.f, ea), sb = ldexpf(1.f, eb);\n";
  s += "  if (blockIdx.x < " + I(ga) + ") {\n";
  s += split_walk(a, "a", "a16", "sa", "0", ga, split ? std::vector<std::string>{"hi", "hi", "lo"} : std::vector<std::string>{"hi"});
  s += "  } else {\n";
  s += split_walk(b, "b", "b16", "sb", I(ga), gb, split ? std::vector<std::string>{"hi", "lo", "hi"} : std::vector<std::string>{"hi"});
  s += "  }\n}\n";
  PlanKernel copies = generated_kernel(g, ks, name + "_split", s, {src_a, src_b, scales.partial, a16, b16, alpha}, ga + gb, kThreads);

  lib["a"] = copy_json(a, lib.at("a"));
  lib["b"] = copy_json(b, lib.at("b"));
  lib["k"] = parts * a.kp;
  step.args[0] = a16;
  step.args[1] = b16;
  step.args.insert(step.args.end() - 1, alpha);  // before the workspace
  return {scales.absmax, copies, step};
}

}  // namespace kforge
