// Which shape of elementwise kernel moves the most bytes per second on this GPU? The measurement behind the
// pointwise emitter's grid and cache-hint choices (src/codegen/emit_pointwise.cpp). Each variant computes
// y = relu(x) over N floats (3.2 GB each way by default), timed like the kb protocol: a 256 MB L2 flush before
// every trial, CUDA events around the launch, the median of 20 trials.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 tools/microbench/elementwise_bw.cu -o /tmp/ew && /tmp/ew [N]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1); } } while (0)

enum Hint { plain = 0, streaming = 1, stream_store = 2 };

template <int HINT> __device__ __forceinline__ float4 load4(const float4* p) {
  if constexpr (HINT == streaming) return __ldcs(p);
  else return *p;
}
template <int HINT> __device__ __forceinline__ void store4(float4* p, float4 v) {
  if constexpr (HINT == streaming || HINT == stream_store) __stcs(p, v);
  else *p = v;
}
__device__ __forceinline__ float4 relu4(float4 v) {
  return {fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f)};
}

// The emitter's form: grid-stride over chunks of BLOCK * 4 * ITEMS floats; all ITEMS loads before any store.
template <int BLOCK, int ITEMS, int HINT>
__global__ void __launch_bounds__(BLOCK) relu_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  const long long chunk4 = (long long)BLOCK * ITEMS;
  for (long long c = (long long)blockIdx.x * chunk4; c < n4; c += (long long)gridDim.x * chunk4) {
    float4 v[ITEMS];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      long long i = c + (long long)u * BLOCK + threadIdx.x;
      if (i < n4) v[u] = load4<HINT>(x + i);
    }
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      long long i = c + (long long)u * BLOCK + threadIdx.x;
      if (i < n4) store4<HINT>(y + i, relu4(v[u]));
    }
  }
}

struct Variant {
  const char* name;
  std::function<void(const float4*, float4*, long long)> launch;
};

template <int BLOCK, int ITEMS, int HINT> Variant variant(const char* name, long long max_grid) {
  return {name, [max_grid](const float4* x, float4* y, long long n4) {
            long long blocks = (n4 + (long long)BLOCK * ITEMS - 1) / ((long long)BLOCK * ITEMS);
            relu_kernel<BLOCK, ITEMS, HINT><<<(unsigned)std::min(blocks, max_grid), BLOCK>>>(x, y, n4);
          }};
}

int main(int argc, char** argv) {
  long long n = argc > 1 ? std::atoll(argv[1]) : 49152LL * 16384;
  long long n4 = n / 4;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float *x, *y;
  int* flush;
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&y, n * 4));
  CHECK(cudaMalloc(&flush, 256 << 20));
  CHECK(cudaMemset(x, 0x3f, n * 4));
  const long long clamp = 132LL * 64 * 4, one_shot = 1LL << 40;
  std::vector<Variant> vs = {
      {"memcpy D2D", [&](const float4* a, float4* b, long long m) { CHECK(cudaMemcpyAsync(b, a, m * 16, cudaMemcpyDeviceToDevice)); }},
      variant<256, 4, plain>("b256 i4 clamped (emitter default)", clamp),
      variant<256, 4, plain>("b256 i4 one-shot", one_shot),
      variant<128, 4, plain>("b128 i4 one-shot", one_shot),
      variant<128, 2, plain>("b128 i2 one-shot", one_shot),
      variant<128, 1, plain>("b128 i1 one-shot", one_shot),
      variant<256, 8, plain>("b256 i8 one-shot", one_shot),
      variant<256, 4, streaming>("b256 i4 clamped, ld/st.cs", clamp),
      variant<256, 4, streaming>("b256 i4 one-shot, ld/st.cs", one_shot),
      variant<256, 4, stream_store>("b256 i4 one-shot, st.cs", one_shot),
      variant<128, 4, streaming>("b128 i4 one-shot, ld/st.cs", one_shot),
      variant<256, 4, plain>("b256 i4 persistent 8/SM", sms * 8LL),
      variant<256, 4, streaming>("b256 i4 persistent 8/SM, ld/st.cs", sms * 8LL),
      variant<512, 4, plain>("b512 i4 one-shot", one_shot),
  };
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::printf("| variant | median ms | GB/s |\n|---|---:|---:|\n");
  for (int round = 0; round < 2; ++round)
    for (auto& v : vs) {
      std::vector<float> t;
      for (int i = 0; i < 24; ++i) {
        CHECK(cudaMemsetAsync(flush, i, 256 << 20));
        CHECK(cudaEventRecord(a));
        v.launch(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (i >= 4) t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      float med = t[t.size() / 2];
      if (round == 1) std::printf("| %s | %.4f | %.0f |\n", v.name, med, 2.0 * n * 4 / med / 1e6);
    }
  CHECK(cudaGetLastError());
  return 0;
}
