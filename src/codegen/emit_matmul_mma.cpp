// Matrix products on kforge's own tensor-core kernel (strategy mma): C = A @ B with the product's epilogue
// (bias, ReLU, GELU's tanh form) applied in the store, for every batch entry. Why it exists beside cuBLASLt:
// split precision (tf32x3), which cuBLASLt does not offer, puts fp32-accurate products on the tensor cores, so
// the strict tier gets them too; plain tf32 is here as the same kernel's relaxed-tier twin.
//
// The kernel, as in llm.c: a block of 8 warps computes a 128 x 128 tile of C; each warp a 64 x 32 piece of it,
// as 4 x 4 mma.sync.m16n8k8 tiles with fp32 accumulators (64 floats a thread). The K loop stages a 128 x 16
// slab of A and a 16 x 128 slab of B in shared memory with cp.async, three stages deep so that the next two
// slabs' copies overlap this one's products; each warp reads its fragments and issues the products. tf32x3
// splits every element when it reads a fragment: big = tf32(x), small = tf32(x - big), and sums a slab's six
// products per pair (small terms first) in a fresh register that an ordinary fp32 add then puts into the
// accumulator: the tensor core truncates its addends at the largest one's exponent, which would cut the small
// terms at the running sum's (ir/tf32.h emulates both on the CPU). Sizes, strides and transposes are constants
// of the source: one compile per shape.
//
// Staging, the schedule's `vec`: 1 copies single floats into k-major slabs ([k][128 + 8]: the fragment reads of
// a warp fall in 32 banks). 4 copies 16 bytes at a time where the operand's rows allow it (a leading dim and
// batch stride that are multiples of 4), and keeps an operand that is contiguous along k row-major in shared
// memory ([128][16 + 4]), where its 16-byte copies land whole and its fragment reads are conflict-free too.
#include "codegen/emitters.h"
#include "ir/error.h"
#include "ir/matmul.h"
#include "ir/tf32.h"

namespace kforge {

namespace {

constexpr int kTileM = 128, kTileN = 128, kTileK = 16;
static_assert(kTileM == kTileN, "the staging code serves both operands with one tile extent");
constexpr int kPadKMajor = 8, kPadTMajor = 4;
// Stages of the copy pipeline: the slabs of the next two K steps are in flight while the tensor cores work on
// this one, and one barrier a step suffices (the stage a copy overwrites was last read two steps ago).
constexpr int kStages = 3;
static_assert(kTileK == 8 * kMmaStepsPerSum, "a slab's k steps are summed in one register (ir/tf32.h models it)");

// How one operand's slab is staged: the matrix as stored, and where its elements go in shared memory.
struct Slab {
  std::string smem, ptr, tile_dim, origin;  // "As", "Ab", "m", "m0"
  bool k_contiguous = false;                // the stored rows run along k (A as m x k, B transposed as n x k)
  bool vector = false;                      // 16-byte copies
  bool t_major = false;                     // shared memory [t][k] instead of [k][t]
  int64_t ld = 0, extent = 0, k = 0;

  std::string at(const std::string& stage, const std::string& kk, const std::string& t) const {
    return smem + "[" + stage + "][" + (t_major ? t + "][" + kk : kk + "][" + t) + "]";
  }
  // One stage's slab in shared memory: [row of the tile][k] (t-major) or [k][row of the tile].
  int rows() const { return t_major ? kTileM : kTileK; }
  int columns() const { return t_major ? kTileK + kPadTMajor : kTileM + kPadKMajor; }
  int floats() const { return kStages * rows() * columns(); }
  // The stages, carved from the kernel's dynamic shared memory at `offset` floats (a multiple of 4: 16-byte copies).
  std::string declaration(int offset) const {
    const std::string dims = "[" + std::to_string(rows()) + "][" + std::to_string(columns()) + "]";
    return "float (*" + smem + ")" + dims + " = reinterpret_cast<float (*)" + dims + ">(kf_smem + " + std::to_string(offset) +
           ");  // [stage]" + (t_major ? "[row of the tile][k]" : "[k][row of the tile]") + "\n";
  }
};

Slab slab(const std::string& name, const nlohmann::json& op, bool k_contiguous, int64_t extent, int64_t k, int vec) {
  Slab s{name + "s", name + "b", name == "A" ? "m" : "n", name == "A" ? "m0" : "n0"};
  s.k_contiguous = k_contiguous;
  s.ld = op.at("ld").get<int64_t>();
  s.extent = extent;
  s.k = k;
  s.vector = vec == 4 && s.ld % 4 == 0 && op.at("batch_stride").get<int64_t>() % 4 == 0;
  s.t_major = vec == 4 && k_contiguous;
  return s;
}

// The loop that stages `s`'s slab for the K offset k0 into stage `buf`; zero outside the matrix. The index runs
// along the stored matrix's contiguous dim, so the loads coalesce.
std::string stage(const Slab& s) {
  const int per_copy = s.vector ? 4 : 1, copies = kTileM * kTileK / per_copy / kMmaThreads;
  // Along the contiguous dim one row of the slab holds `run` copies.
  const int run = (s.k_contiguous ? kTileK : kTileM) / per_copy;
  std::string t = s.k_contiguous ? "idx / " + std::to_string(run) : "idx % " + std::to_string(run) + " * " + std::to_string(per_copy);
  std::string kk = s.k_contiguous ? "idx % " + std::to_string(run) + " * " + std::to_string(per_copy) : "idx / " + std::to_string(run);
  std::string index = s.k_contiguous ? "g" + s.tile_dim + " * " + std::to_string(s.ld) + "LL + gk"
                                     : "gk * " + std::to_string(s.ld) + "LL + g" + s.tile_dim;
  std::string out = "      for (int i = 0; i < " + std::to_string(copies) + "; ++i) {\n";
  out += "        const int idx = tid + i * " + std::to_string(kMmaThreads) + ", t = " + t + ", kk = " + kk + ";\n";
  out += "        const i64 g" + s.tile_dim + " = " + s.origin + " + t, gk = k0 + kk;\n";
  std::string dst = "&" + s.at("buf", "kk", "t");
  if (!s.vector) {
    out += "        const bool inside = g" + s.tile_dim + " < " + std::to_string(s.extent) + " && gk < " + std::to_string(s.k) + ";\n";
    out += "        kf_copy4(" + dst + ", inside ? " + s.ptr + " + (" + index + ") : " + s.ptr + ", inside);\n";
  } else {
    // The copy's 4 floats run along the contiguous dim; past the matrix's end there, fewer bytes are read and
    // the rest of the 16 is zero-filled. (With ld the stored row length, as emit_matmul makes it, a vector copy
    // implies that length is a multiple of 4: a partial copy happens only for an ld longer than the rows.)
    std::string along = s.k_contiguous ? "gk" : "g" + s.tile_dim, across = s.k_contiguous ? "g" + s.tile_dim : "gk";
    int64_t along_end = s.k_contiguous ? s.k : s.extent, across_end = s.k_contiguous ? s.extent : s.k;
    out += "        const i64 left = " + across + " < " + std::to_string(across_end) + " ? " + std::to_string(along_end) +
           "LL - " + along + " : 0;\n";
    out += "        const int bytes = left <= 0 ? 0 : left >= 4 ? 16 : int(left) * 4;\n";
    out += "        kf_copy16(" + dst + ", bytes ? " + s.ptr + " + (" + index + ") : " + s.ptr + ", bytes);\n";
  }
  return out + "      }\n";
}

std::string epilogue_code(Epilogue e) {
  std::string s;
  if (has_bias(e)) s += "v += bias[col]; ";
  if (e == Epilogue::relu || e == Epilogue::bias_relu) s += "v = fmaxf(v, 0.f); ";
  if (e == Epilogue::gelu || e == Epilogue::bias_gelu) s += "v = kf_gelu_tanh(v); ";
  return s;
}

const char* kDeviceHelpers = R"(__device__ __forceinline__ unsigned kf_shared_address(const void* p) {
  unsigned d;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(d) : "l"(p));
  return d;
}
// Global -> shared without passing through registers (cp.async, sm_80+). 4 bytes: src-size 0 writes a zero.
__device__ __forceinline__ void kf_copy4(float* dst, const float* src, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(kf_shared_address(dst)), "l"(src), "r"(inside ? 4 : 0));
}
// 16 bytes (both addresses 16-byte aligned); the bytes past `bytes` are zero-filled.
__device__ __forceinline__ void kf_copy16(float* dst, const float* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(kf_shared_address(dst)), "l"(src), "r"(bytes));
}
)";

}  // namespace

std::vector<PlanKernel> emit_matmul_mma(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                        const std::string& name, const MatmulDims& d, const nlohmann::json& a,
                                        const nlohmann::json& b, Epilogue e, std::vector<int> args) {
  KF_ASSERT(ks.precision == Precision::tf32 || ks.precision == Precision::tf32x3, "mma needs tf32 or tf32x3");
  const bool split = ks.precision == Precision::tf32x3;
  const int64_t batch = numel(d.batch), tiles_m = (d.m + kTileM - 1) / kTileM, tiles_n = (d.n + kTileN - 1) / kTileN;
  const int64_t tiles = batch * tiles_m * tiles_n;
  const Slab sa = slab("A", a, !a.at("transposed").get<bool>(), d.m, d.k, ks.vec);
  const Slab sb = slab("B", b, b.at("transposed").get<bool>(), d.n, d.k, ks.vec);
  const auto I = i64_literal;

  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "#define KF_SPLIT " + std::string(split ? "1" : "0") + "  // tf32x3: three products per element pair\n";
  s += kDeviceHelpers;
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kMmaThreads) + ", " + std::to_string(ks.items) +
       ") " + name + "(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C" +
       (has_bias(e) ? ", const float* __restrict__ bias" : "") + ") {\n";
  static_assert((kStages * kTileM * (kTileK + kPadTMajor)) % 4 == 0 && (kStages * kTileK * (kTileM + kPadKMajor)) % 4 == 0);
  s += "  extern __shared__ __align__(16) float kf_smem[];\n";
  s += "  " + sa.declaration(0) + "  " + sb.declaration(sa.floats());
  s += R"(  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int group = lane / 4, quad = lane % 4;  // mma fragment coordinates (PTX ISA, m16n8k8 .tf32)
  const int warp_m = (warp / 4) * 64, warp_n = (warp % 4) * 32;
)";
  s += "  for (i64 tile = blockIdx.x; tile < " + I(tiles) + "; tile += gridDim.x) {\n";
  s += "    const i64 bz = tile / " + I(tiles_m * tiles_n) + ", m0 = (tile / " + I(tiles_n) + ") % " + I(tiles_m) +
       " * " + std::to_string(kTileM) + ", n0 = tile % " + I(tiles_n) + " * " + std::to_string(kTileN) + ";\n";
  s += "    const float* Ab = A + bz * " + I(a.at("batch_stride").get<int64_t>()) + ";\n";
  s += "    const float* Bb = B + bz * " + I(b.at("batch_stride").get<int64_t>()) + ";\n";
  s += "    float* Cb = C + bz * " + I(batch == 1 ? 0 : d.m * d.n) + ";\n";
  s += "    float acc[4][4][4] = {};  // [m tile][n tile][fragment]\n";
  // Stage `buf` <- the K slab at k0, as one commit group of asynchronous copies.
  s += "    auto load = [&](int buf, i64 k0) {\n" + stage(sa) + stage(sb);
  s += "      asm volatile(\"cp.async.commit_group;\");\n    };\n";
  s += "    const i64 steps = " + I((d.k + kTileK - 1) / kTileK) + ";\n";
  const std::string K = std::to_string(kTileK), S = std::to_string(kStages);
  s += R"(    load(0, 0);
    if (steps > 1) load(1, )" + K + R"();
    else asm volatile("cp.async.commit_group;");  // empty groups keep the waits below uniform
    for (i64 step = 0; step < steps; ++step) {
      const int cur = int(step % )" + S + R"();
      asm volatile("cp.async.wait_group 1;");  // every group but the newest is done: stage cur has landed
      // Stage cur is visible to all, and everyone is done with step - 1, whose stage the copy below refills.
      __syncthreads();
      if (step + 2 < steps) load(int((step + 2) % )" + S + R"(), (step + 2) * )" + K + R"();
      else asm volatile("cp.async.commit_group;");
      // The slab's two k steps' fragments at once: under split precision each product's three mma.sync of both
      // steps go into one fresh register, so the accumulator takes one fp32 add per two steps.
      // Every loop over fragments is unrolled: register arrays indexed by anything but constants go to local memory.
      unsigned a_big[2][4][4], a_small[2][4][4], b_big[2][4][2], b_small[2][4][2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int kk = h * 8;
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
          const int r = warp_m + mt * 16 + group;
)";
  s += "          kf_split(" + sa.at("cur", "kk + quad", "r") + ", a_big[h][mt][0], a_small[h][mt][0], KF_SPLIT);\n";
  s += "          kf_split(" + sa.at("cur", "kk + quad", "r + 8") + ", a_big[h][mt][1], a_small[h][mt][1], KF_SPLIT);\n";
  s += "          kf_split(" + sa.at("cur", "kk + quad + 4", "r") + ", a_big[h][mt][2], a_small[h][mt][2], KF_SPLIT);\n";
  s += "          kf_split(" + sa.at("cur", "kk + quad + 4", "r + 8") + ", a_big[h][mt][3], a_small[h][mt][3], KF_SPLIT);\n";
  s += R"(        }
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int c = warp_n + nt * 8 + group;
)";
  s += "          kf_split(" + sb.at("cur", "kk + quad", "c") + ", b_big[h][nt][0], b_small[h][nt][0], KF_SPLIT);\n";
  s += "          kf_split(" + sb.at("cur", "kk + quad + 4", "c") + ", b_big[h][nt][1], b_small[h][nt][1], KF_SPLIT);\n";
  s += R"(        }
      }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          if (KF_SPLIT) {  // both steps' products in a fresh register, the small terms first (ir/tf32.h, tf32_dot)
            float part[4] = {};
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              kf_mma(part, a_small[h][mt], b_big[h][nt]);
              kf_mma(part, a_big[h][mt], b_small[h][nt]);
            }
            for (int h = 0; h < 2; ++h) kf_mma(part, a_big[h][mt], b_big[h][nt]);
            for (int f = 0; f < 4; ++f) acc[mt][nt][f] += part[f];  // rounded to nearest
          } else {
            for (int h = 0; h < 2; ++h) kf_mma(acc[mt][nt], a_big[h][mt], b_big[h][nt]);
          }
        }
    }
    __syncthreads();  // everyone is done with the last stages before the next tile's copies refill them
    // Fragment f of a 16 x 8 tile holds row group + 8 * (f / 2), column 2 * quad + f % 2.
    for (int mt = 0; mt < 4; ++mt)
      for (int nt = 0; nt < 4; ++nt)
        for (int f = 0; f < 4; ++f) {
          const i64 row = m0 + warp_m + mt * 16 + group + 8 * (f / 2), col = n0 + warp_n + nt * 8 + 2 * quad + f % 2;
)";
  s += "          if (row < " + I(d.m) + " && col < " + I(d.n) + ") {\n";
  s += "            float v = acc[mt][nt][f];\n";
  s += "            " + epilogue_code(e) + "\n";
  s += "            Cb[row * " + I(d.n) + " + col] = v;\n";
  s += "          }\n        }\n  }\n}\n";

  PlanKernel k = generated_kernel(g, ks, name, s, std::move(args), clamp_grid(g, tiles), kMmaThreads);
  k.smem = int(sizeof(float)) * (sa.floats() + sb.floats());
  return {k};
}

}  // namespace kforge
