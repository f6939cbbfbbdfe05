// Can a row kernel read each row from HBM once and still keep HBM busy? The measurement behind the row
// emitter's cluster split (src/codegen/emit_row.cpp). Two problems of the level-1 suite, each in several forms:
//
//   layer norm over rows of 24480 floats (24576 rows, 2.4 GB): two walks (moments, then output; the second
//   finds the row in L2 or not), optionally with L2 eviction hints; or the row held in registers, split
//   across a thread-block cluster of C blocks whose partial moments meet in distributed shared memory, so
//   that several rows are in different phases on one SM;
//
//   log-softmax over the channel dim of [64, 1021, 6144] (rows of 1021 floats at stride 6144): tiles of 32
//   columns (a lane a column, warps down the rows), two walks, or the tile in registers across a cluster.
//
// Timed like the kb protocol: a 256 MB L2 flush before every trial, CUDA events around the launch, the median
// of 20 trials; the device-to-device copy of the same bytes alongside.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 tools/microbench/row_cluster.cu -o /tmp/rc && /tmp/rc
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace cg = cooperative_groups;

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1); } } while (0)

// ---- layer norm --------------------------------------------------------------------------------------------
constexpr long long LN_ROWS = 24576, LN_N = 24480, LN_N4 = LN_N / 4;

enum Hint { plain = 0, keep_then_drop = 1 };

__device__ __forceinline__ unsigned long long policy_last() {
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ unsigned long long policy_first() {
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float4 load_policy(const float4* p, unsigned long long pol) {
  float4 v;
  asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(pol));
  return v;
}

struct Moments { float s, q; };
__device__ __forceinline__ Moments warp_sum(Moments m) {
  for (int o = 16; o > 0; o >>= 1) m.s += __shfl_xor_sync(~0u, m.s, o), m.q += __shfl_xor_sync(~0u, m.q, o);
  return m;
}
// Every thread gets the block's total.
__device__ __forceinline__ Moments block_sum(Moments m, Moments* scratch) {
  m = warp_sum(m);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = m;
  __syncthreads();
  m = (threadIdx.x & 31) < (blockDim.x >> 5) ? scratch[threadIdx.x & 31] : Moments{0.f, 0.f};
  return warp_sum(m);
}
// A row's mean and 1 / std from its moments about 0.5 (the inputs' centre: fewer cancelled bits).
struct RowStats { float mean, rstd; };
__device__ __forceinline__ RowStats row_stats(Moments m) {
  const float mean = m.s / LN_N + 0.5f;
  return {mean, rsqrtf(fmaxf(m.q / LN_N - (mean - 0.5f) * (mean - 0.5f), 0.f) + 1e-5f)};
}
__device__ __forceinline__ float4 norm4(float4 v, float mean, float rstd, float4 w, float4 b) {
  return {(v.x - mean) * rstd * w.x + b.x, (v.y - mean) * rstd * w.y + b.y, (v.z - mean) * rstd * w.z + b.z,
          (v.w - mean) * rstd * w.w + b.w};
}
__device__ __forceinline__ void add4(Moments& m, float4 v, float x0) {
  float a = v.x - x0, b = v.y - x0, c = v.z - x0, d = v.w - x0;
  m.s += a + b + c + d, m.q += a * a + b * b + c * c + d * d;
}

// Two walks a row, a block a row (grid-stride), kforge's best plan of run 9.4 in form.
template <int T, int HINT>
__global__ void __launch_bounds__(T) ln_two_walk(const float4* x, const float4* w, const float4* b, float4* y) {
  __shared__ Moments scratch[32];
  const unsigned long long keep = policy_last(), drop = policy_first();
  for (long long row = blockIdx.x; row < LN_ROWS; row += gridDim.x) {
    const float4* xr = x + row * LN_N4;
    Moments m{0.f, 0.f};
#pragma unroll 2
    for (int i = threadIdx.x; i < LN_N4; i += T) add4(m, HINT == keep_then_drop ? load_policy(xr + i, keep) : xr[i], 0.5f);
    m = block_sum(m, scratch);
    const auto [mean, rstd] = row_stats(m);
#pragma unroll 2
    for (int i = threadIdx.x; i < LN_N4; i += T)
      y[row * LN_N4 + i] = norm4(HINT == keep_then_drop ? load_policy(xr + i, drop) : xr[i], mean, rstd, w[i], b[i]);
  }
}

// The row's moments: the block's `m` summed, written to its `part`, and every block's part summed through
// distributed shared memory (the caller syncs the cluster again before its blocks may leave).
template <int C>
__device__ __forceinline__ Moments cluster_sum(cg::cluster_group& cluster, Moments m, Moments& part, Moments* scratch) {
  m = block_sum(m, scratch);
  if (threadIdx.x == 0) part = m;
  cluster.sync();
  Moments total{0.f, 0.f};
#pragma unroll
  for (int r = 0; r < C; ++r) {
    const Moments* p = cluster.map_shared_rank(&part, r);
    total.s += p->s, total.q += p->q;
  }
  return total;
}

// A cluster of C blocks a row: block `rank` holds float4s [rank * LN_N4 / C, (rank + 1) * LN_N4 / C) of it in
// registers, PER a thread; the blocks' moments meet in distributed shared memory.
template <int C, int T, int PER>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(T) ln_cluster(const float4* x, const float4* w, const float4* b, float4* y) {
  static_assert(LN_N4 % C == 0 && LN_N4 / C <= T * PER, "the row's share must fit the block's registers");
  constexpr int SHARE = LN_N4 / C;
  __shared__ Moments scratch[32];
  __shared__ Moments part;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const long long row = blockIdx.x / C;
  const float4* xr = x + row * LN_N4 + rank * SHARE;
  float4 v[PER];
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const int i = threadIdx.x + j * T;
    v[j] = i < SHARE ? xr[i] : make_float4(0.5f, 0.5f, 0.5f, 0.5f);
  }
  Moments m{0.f, 0.f};
#pragma unroll
  for (int j = 0; j < PER; ++j) add4(m, v[j], 0.5f);
  const auto [mean, rstd] = row_stats(cluster_sum<C>(cluster, m, part, scratch));
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const int i = threadIdx.x + j * T;
    if (i < SHARE) y[row * LN_N4 + rank * SHARE + i] = norm4(v[j], mean, rstd, w[rank * SHARE + i], b[rank * SHARE + i]);
  }
  cluster.sync();  // no block leaves while another may still read its `part`
}

// The same with scalar loads (a float a step, PER of them a thread, r = threadIdx.x + j * T): the form of the
// generator's register rows, whose walks are element by element.
template <int C, int T, int PER>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(T) ln_cluster_scalar(const float* x, const float* w, const float* b, float* y) {
  constexpr int SHARE = LN_N / C;
  static_assert(LN_N % C == 0 && SHARE <= T * PER, "the row's share must fit the block's registers");
  __shared__ Moments scratch[32];
  __shared__ Moments part;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const long long row = blockIdx.x / C;
  const float* xr = x + row * LN_N + rank * SHARE;
  float v[PER];
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const int i = threadIdx.x + j * T;
    v[j] = i < SHARE ? xr[i] : 0.5f;
  }
  Moments m{0.f, 0.f};
#pragma unroll
  for (int j = 0; j < PER; ++j) m.s += v[j] - 0.5f, m.q += (v[j] - 0.5f) * (v[j] - 0.5f);
  const auto [mean, rstd] = row_stats(cluster_sum<C>(cluster, m, part, scratch));
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const int i = threadIdx.x + j * T;
    if (i < SHARE) y[row * LN_N + rank * SHARE + i] = (v[j] - mean) * rstd * w[rank * SHARE + i] + b[rank * SHARE + i];
  }
  cluster.sync();
}

// ---- log-softmax over the channel dim ------------------------------------------------------------------------
constexpr long long LS_B = 64, LS_C = 1021, LS_S = 6144;

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// Tiles of 32 columns: lane l owns column tile * 32 + l, warp q walks channels q, q + W, ...: an online max
// and sum in the first walk, the output in the second.
template <int T>
__global__ void __launch_bounds__(T) ls_tile(const float* x, float* y) {
  constexpr int W = T / 32;
  __shared__ MaxSum part[W][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (long long tile = blockIdx.x; tile < LS_B * LS_S / 32; tile += gridDim.x) {
    const long long bi = tile / (LS_S / 32), col = (tile % (LS_S / 32)) * 32 + lane;
    const float* xc = x + bi * LS_C * LS_S + col;
    MaxSum a{-INFINITY, 0.f};
#pragma unroll 4
    for (int c = warp; c < LS_C; c += W) {
      const float v = xc[(long long)c * LS_S];
      const float m = fmaxf(a.m, v);
      a = {m, a.s * expf(a.m - m) + expf(v - m)};
    }
    __syncthreads();
    part[warp][lane] = a;
    __syncthreads();
    MaxSum t = part[0][lane];
    for (int q = 1; q < W; ++q) t = combine(t, part[q][lane]);
    const float shift = t.m + logf(t.s);
#pragma unroll 4
    for (int c = warp; c < LS_C; c += W) y[bi * LS_C * LS_S + (long long)c * LS_S + col] = xc[(long long)c * LS_S] - shift;
  }
}

// The tile across a cluster: block `rank` holds channels [rank * CH, (rank + 1) * CH) of its 32 columns in
// registers, PER a thread (warp q: channels q, q + W, ... of the share).
template <int C, int T, int PER>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(T) ls_cluster(const float* x, float* y) {
  constexpr int W = T / 32, CH = (LS_C + C - 1) / C;
  static_assert(CH <= W * PER, "the share must fit the block's registers");
  __shared__ MaxSum part[W][32];
  __shared__ MaxSum total[32];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank(), lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long tile = blockIdx.x / C, bi = tile / (LS_S / 32), col = (tile % (LS_S / 32)) * 32 + lane;
  const int c0 = rank * CH, c1 = min(c0 + CH, (int)LS_C);
  const float* xc = x + bi * LS_C * LS_S + col;
  float v[PER];
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const int c = c0 + warp + j * W;
    v[j] = c < c1 ? xc[(long long)c * LS_S] : -INFINITY;
  }
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < PER; ++j) m = fmaxf(m, v[j]);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < PER; ++j) s += expf(v[j] - m);
  part[warp][lane] = {m, s};
  __syncthreads();
  if (warp == 0) {
    MaxSum t = part[0][lane];
    for (int q = 1; q < W; ++q) t = combine(t, part[q][lane]);
    total[lane] = t;
  }
  cluster.sync();
  MaxSum t = *cluster.map_shared_rank(&total[lane], 0);
  for (int r = 1; r < C; ++r) t = combine(t, *cluster.map_shared_rank(&total[lane], r));
  const float shift = t.m + logf(t.s);
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const int c = c0 + warp + j * W;
    if (c < c1) y[bi * LS_C * LS_S + (long long)c * LS_S + col] = v[j] - shift;
  }
  cluster.sync();
}

// ---- timing ----------------------------------------------------------------------------------------------------
struct Variant {
  const char* name;
  std::function<void()> launch;
};

float median_ms(const std::function<void()>& launch, void* flush, size_t flush_bytes) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    CHECK(cudaMemsetAsync(flush, i, flush_bytes));
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t;
    CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Largest difference from the first variant's output, to catch a broken variant.
float max_diff(const float* y, const std::vector<float>& ref) {
  std::vector<float> h(ref.size());
  CHECK(cudaMemcpy(h.data(), y, h.size() * 4, cudaMemcpyDeviceToHost));
  float d = 0.f;
  for (size_t i = 0; i < h.size(); ++i) d = std::max(d, std::fabs(h[i] - ref[i]));
  return d;
}

void run(const char* title, size_t elems, const std::vector<Variant>& variants, float* y, const void* x, void* flush,
         size_t flush_bytes) {
  const float copy = median_ms([&] { CHECK(cudaMemcpyAsync(y, x, elems * 4, cudaMemcpyDeviceToDevice)); }, flush, flush_bytes);
  std::printf("\n%s: %zu floats; copy %.4f ms (%.0f GB/s)\n| variant | ms | %% of copy | max diff |\n|---|---:|---:|---:|\n",
              title, elems, copy, 2.0 * elems * 4 / copy / 1e6);
  std::vector<float> ref;
  for (const Variant& v : variants) {
    const float ms = median_ms(v.launch, flush, flush_bytes);
    if (ref.empty()) {
      ref.resize(elems);
      CHECK(cudaMemcpy(ref.data(), y, elems * 4, cudaMemcpyDeviceToHost));
    }
    std::printf("| %s | %.4f | %.1f | %.2e |\n", v.name, ms, 100.0 * copy / ms, max_diff(y, ref));
    std::fflush(stdout);
  }
}

__global__ void fill(float* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
    p[i] = (h & 0xffffff) / 16777216.0f * 4.f - 1.5f;
  }
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t flush_bytes = 256u << 20;
  void* flush;
  CHECK(cudaMalloc(&flush, flush_bytes));
  {
    const size_t n = LN_ROWS * LN_N;
    float *x, *y, *w, *b;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    CHECK(cudaMalloc(&w, LN_N * 4));
    CHECK(cudaMalloc(&b, LN_N * 4));
    fill<<<4096, 256>>>(x, n, 1), fill<<<64, 256>>>(w, LN_N, 2), fill<<<64, 256>>>(b, LN_N, 3);
    auto X = (const float4*)x, Wt = (const float4*)w, B = (const float4*)b;
    auto Y = (float4*)y;
    const unsigned grid2 = 2 * sms;  // two 1024-thread blocks an SM
    std::vector<Variant> v = {
        {"two walks, 1024 threads, a block a row", [=] { ln_two_walk<1024, plain><<<LN_ROWS, 1024>>>(X, Wt, B, Y); }},
        {"two walks, 1024 threads, grid 2 x SMs", [=] { ln_two_walk<1024, plain><<<grid2, 1024>>>(X, Wt, B, Y); }},
        {"two walks + L2 evict_last/evict_first", [=] { ln_two_walk<1024, keep_then_drop><<<LN_ROWS, 1024>>>(X, Wt, B, Y); }},
        {"two walks, 512 threads", [=] { ln_two_walk<512, plain><<<LN_ROWS, 512>>>(X, Wt, B, Y); }},
        {"registers, 1 block of 1024 (6 float4)", [=] { ln_cluster<1, 1024, 6><<<LN_ROWS, 1024>>>(X, Wt, B, Y); }},
        {"registers, cluster 2 x 512 (6 float4)", [=] { ln_cluster<2, 512, 6><<<LN_ROWS * 2, 512>>>(X, Wt, B, Y); }},
        {"registers, cluster 4 x 256 (6 float4)", [=] { ln_cluster<4, 256, 6><<<LN_ROWS * 4, 256>>>(X, Wt, B, Y); }},
        {"registers, cluster 8 x 128 (6 float4)", [=] { ln_cluster<8, 128, 6><<<LN_ROWS * 8, 128>>>(X, Wt, B, Y); }},
        {"registers, cluster 4 x 512 (3 float4)", [=] { ln_cluster<4, 512, 3><<<LN_ROWS * 4, 512>>>(X, Wt, B, Y); }},
        {"registers, cluster 8 x 256 (3 float4)", [=] { ln_cluster<8, 256, 3><<<LN_ROWS * 8, 256>>>(X, Wt, B, Y); }},
        {"scalar registers, cluster 4 x 256 (24 floats)", [=] { ln_cluster_scalar<4, 256, 24><<<LN_ROWS * 4, 256>>>(x, w, b, y); }},
        {"scalar registers, cluster 2 x 512 (24 floats)", [=] { ln_cluster_scalar<2, 512, 24><<<LN_ROWS * 2, 512>>>(x, w, b, y); }},
        {"scalar registers, cluster 8 x 256 (12 floats)", [=] { ln_cluster_scalar<8, 256, 12><<<LN_ROWS * 8, 256>>>(x, w, b, y); }},
    };
    run("layer norm [24576, 24480]", n, v, y, x, flush, flush_bytes);
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFree(w));
    CHECK(cudaFree(b));
  }
  {
    const size_t n = LS_B * LS_C * LS_S;
    float *x, *y;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    fill<<<4096, 256>>>(x, n, 4);
    const unsigned tiles = LS_B * LS_S / 32;
    std::vector<Variant> v = {
        {"tile 256, two walks", [=] { ls_tile<256><<<tiles, 256>>>(x, y); }},
        {"tile 1024, two walks", [=] { ls_tile<1024><<<tiles, 1024>>>(x, y); }},
        {"registers, cluster 2 x 512 (32 a thread)", [=] { ls_cluster<2, 512, 32><<<tiles * 2, 512>>>(x, y); }},
        {"registers, cluster 4 x 256 (32 a thread)", [=] { ls_cluster<4, 256, 32><<<tiles * 4, 256>>>(x, y); }},
        {"registers, cluster 8 x 256 (16 a thread)", [=] { ls_cluster<8, 256, 16><<<tiles * 8, 256>>>(x, y); }},
        {"registers, cluster 8 x 128 (32 a thread)", [=] { ls_cluster<8, 128, 32><<<tiles * 8, 128>>>(x, y); }},
        {"registers, cluster 4 x 512 (16 a thread)", [=] { ls_cluster<4, 512, 16><<<tiles * 4, 512>>>(x, y); }},
    };
    run("log-softmax over dim 1 of [64, 1021, 6144]", n, v, y, x, flush, flush_bytes);
  }
  return 0;
}
