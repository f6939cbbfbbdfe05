// Matrix products on kforge's own tensor-core kernel (strategy mma): C = A @ B with the product's epilogue
// (bias, ReLU, GELU's tanh form) applied in the store, for every batch entry. Why it exists beside cuBLASLt:
// split precision (tf32x3), which cuBLASLt does not offer, puts fp32-accurate products on the tensor cores, so
// the strict tier gets them too; plain tf32 is here as the same kernel's relaxed-tier twin.
//
// The kernel, as in llm.c: a block of 8 warps computes a 128 x 128 tile of C; each warp a 64 x 32 piece of it,
// as 4 x 4 mma.sync.m16n8k8 tiles with fp32 accumulators (64 floats a thread). The K loop stages a 128 x 16
// slab of A and a 16 x 128 slab of B in shared memory (k-major, padded by 8 floats so that the fragment reads
// of a warp fall in 32 different banks) with cp.async, double-buffered so that the next slab's copy overlaps
// this one's products; each warp reads its fragments and issues the products. tf32x3
// splits every element when it reads a fragment: big = tf32(x), small = tf32(x - big) (ir/tf32.h emulates
// the arithmetic on the CPU). Sizes, strides and transposes are constants of the source: one compile per shape.
#include "codegen/device_prelude.h"
#include "codegen/emitters.h"
#include "ir/error.h"
#include "ir/matmul.h"

namespace kforge {

namespace {

constexpr int kTileM = 128, kTileN = 128, kTileK = 16, kPad = 8;

// The statement that stages element `idx` (0 .. 128*16-1) of the operand's slab into shared-memory stage
// `buf` (an asynchronous copy; zero outside the matrix). The slab index runs along the stored matrix's
// contiguous dim, so the loads coalesce.
std::string stage(const std::string& smem, const std::string& ptr, bool k_contiguous, int64_t ld,
                  const std::string& tile_dim, const std::string& tile_origin, int64_t extent, int64_t k) {
  // k_contiguous: the stored matrix's rows run along the tile dim (A as m x k, B transposed as n x k).
  std::string t = k_contiguous ? "idx / " + std::to_string(kTileK) : "idx % " + std::to_string(kTileM);
  std::string kk = k_contiguous ? "idx % " + std::to_string(kTileK) : "idx / " + std::to_string(kTileM);
  std::string s;
  s += "        { const int t = " + t + ", kk = " + kk + ";\n";
  s += "          const i64 g" + tile_dim + " = " + tile_origin + " + t, gk = k0 + kk;\n";
  std::string index = k_contiguous ? "g" + tile_dim + " * " + std::to_string(ld) + "LL + gk"
                                   : "gk * " + std::to_string(ld) + "LL + g" + tile_dim;
  s += "          const bool inside = g" + tile_dim + " < " + std::to_string(extent) + " && gk < " + std::to_string(k) + ";\n";
  s += "          kf_copy4(&" + smem + "[buf][kk][t], inside ? " + ptr + " + (" + index + ") : " + ptr + ", inside); }\n";
  return s;
}

std::string epilogue_code(Epilogue e) {
  std::string s;
  if (has_bias(e)) s += "v += bias[col]; ";
  if (e == Epilogue::relu || e == Epilogue::bias_relu) s += "v = fmaxf(v, 0.f); ";
  if (e == Epilogue::gelu || e == Epilogue::bias_gelu) s += "v = kf_gelu_tanh(v); ";
  return s;
}

}  // namespace

std::vector<PlanKernel> emit_matmul_mma(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                        const std::string& name, const MatmulDims& d, const nlohmann::json& a,
                                        const nlohmann::json& b, Epilogue e, std::vector<int> args) {
  KF_ASSERT(ks.precision == Precision::tf32 || ks.precision == Precision::tf32x3, "mma needs tf32 or tf32x3");
  const bool split = ks.precision == Precision::tf32x3;
  const int64_t batch = numel(d.batch), tiles_m = (d.m + kTileM - 1) / kTileM, tiles_n = (d.n + kTileN - 1) / kTileN;
  const int64_t tiles = batch * tiles_m * tiles_n;
  const bool a_t = a.at("transposed"), b_t = b.at("transposed");
  auto I = [](int64_t v) { return std::to_string(v) + "LL"; };

  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "#define KF_SPLIT " + std::string(split ? "1" : "0") + "  // tf32x3: three products per element pair\n";
  s += R"(__device__ __forceinline__ unsigned kf_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
// x = big + small, both TF32 (small is only needed, and only computed, under split precision). Where big is not
// finite (x infinite, or so large that it rounds up) small is 0, not inf - inf: the product stays infinite.
__device__ __forceinline__ void kf_split(float x, unsigned& big, unsigned& small) {
  big = kf_tf32(x);
  small = KF_SPLIT && isfinite(__uint_as_float(big)) ? kf_tf32(x - __uint_as_float(big)) : 0u;
}
// 4 bytes global -> shared without passing through registers (cp.async, sm_80+); src-size 0 writes a zero.
__device__ __forceinline__ void kf_copy4(float* dst, const float* src, bool inside) {
  unsigned d;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(d) : "l"(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(inside ? 4 : 0));
}
__device__ __forceinline__ void kf_mma(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
)";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kMmaThreads) + ", " + std::to_string(ks.items) + ") " + name +
       "(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C" +
       (has_bias(e) ? ", const float* __restrict__ bias" : "") + ") {\n";
  // Two stages: the copy of the next K slab runs while the tensor cores work on this one.
  s += "  __shared__ float As[2][" + std::to_string(kTileK) + "][" + std::to_string(kTileM + kPad) + "];  // [stage][k][row of C]\n";
  s += "  __shared__ float Bs[2][" + std::to_string(kTileK) + "][" + std::to_string(kTileN + kPad) + "];  // [stage][k][column of C]\n";
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
  s += "    auto load = [&](int buf, i64 k0) {\n";
  s += "      for (int i = 0; i < " + std::to_string(kTileM * kTileK / kMmaThreads) + "; ++i) {\n";
  s += "        const int idx = tid + i * " + std::to_string(kMmaThreads) + ";\n";
  s += stage("As", "Ab", !a_t, a.at("ld").get<int64_t>(), "m", "m0", d.m, d.k);
  s += stage("Bs", "Bb", b_t, b.at("ld").get<int64_t>(), "n", "n0", d.n, d.k);
  s += "      }\n      asm volatile(\"cp.async.commit_group;\");\n    };\n";
  s += "    const i64 steps = " + I((d.k + kTileK - 1) / kTileK) + ";\n";
  s += R"(    load(0, 0);
    for (i64 step = 0; step < steps; ++step) {
      const int cur = int(step & 1);
      if (step + 1 < steps) load(cur ^ 1, (step + 1) * )" + std::to_string(kTileK) + R"();
      else asm volatile("cp.async.commit_group;");  // an empty group keeps the wait below uniform
      asm volatile("cp.async.wait_group 1;");  // every group but the newest is done: stage cur has landed
      __syncthreads();
      for (int kk = 0; kk < )" + std::to_string(kTileK) + R"(; kk += 8) {
        unsigned a_big[4][4], a_small[4][4], b_big[4][2], b_small[4][2];
        for (int mt = 0; mt < 4; ++mt) {
          const int r = warp_m + mt * 16 + group;
          kf_split(As[cur][kk + quad][r], a_big[mt][0], a_small[mt][0]);
          kf_split(As[cur][kk + quad][r + 8], a_big[mt][1], a_small[mt][1]);
          kf_split(As[cur][kk + quad + 4][r], a_big[mt][2], a_small[mt][2]);
          kf_split(As[cur][kk + quad + 4][r + 8], a_big[mt][3], a_small[mt][3]);
        }
        for (int nt = 0; nt < 4; ++nt) {
          const int c = warp_n + nt * 8 + group;
          kf_split(Bs[cur][kk + quad][c], b_big[nt][0], b_small[nt][0]);
          kf_split(Bs[cur][kk + quad + 4][c], b_big[nt][1], b_small[nt][1]);
        }
        for (int mt = 0; mt < 4; ++mt)
          for (int nt = 0; nt < 4; ++nt) {
            if (KF_SPLIT) {  // the small terms first: they are added while the accumulator is smallest
              kf_mma(acc[mt][nt], a_small[mt], b_big[nt]);
              kf_mma(acc[mt][nt], a_big[mt], b_small[nt]);
            }
            kf_mma(acc[mt][nt], a_big[mt], b_big[nt]);
          }
      }
      __syncthreads();  // everyone is done with stage cur before the next step's copies overwrite it
    }
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

  PlanKernel k;
  k.name = name;
  k.group = g.key;
  k.source = device_prelude() + "\n" + s;
  k.args = std::move(args);
  k.grid = clamp_grid(tiles);
  k.block = kMmaThreads;
  k.schedule = to_json(ks);
  return {k};
}

}  // namespace kforge
