#include "codegen/device_prelude.h"

namespace kforge {

const std::string& device_prelude() {
  // Precise libm functions (no --use_fast_math): the strict tier allows 1e-4, and __expf's error grows
  // with the argument. NaN propagates through max/min as in torch.amax/amin.
  static const std::string src = R"CUDA(
typedef long long i64;
#define KF_INF __int_as_float(0x7f800000)
#define KF_NAN __int_as_float(0x7fffffff)
// The thread index, read anew: a register row's walks each take their own, so the compiler cannot keep one
// walk's 64-bit element addresses alive across the block reduction for the next (24 slots of a 1024-thread
// block spilled 920 bytes so; recomputed, 56 registers and no spill). Plain threadIdx on the host.
__device__ __forceinline__ int kf_tid() {
#ifdef __CUDA_ARCH__
  int t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return t;
#else
  return int(threadIdx.x);
#endif
}
// Bulk asynchronous copies (sm_90; emit_row.cpp, RowCache::bulk): the copy engine moves a contiguous run of
// global memory (16-byte aligned ends) into shared memory and counts its bytes down on an mbarrier; threads
// wait for the barrier's phase to flip. Device code only: the CPU runner runs no block-strategy kernel.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned kf_smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void kf_bulk_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(kf_smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// The one arrival of the barrier's phase: the bytes the copies issued next will deliver.
__device__ __forceinline__ void kf_bulk_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(kf_smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void kf_bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(kf_smem_addr(dst)), "l"(src), "r"(bytes), "r"(kf_smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void kf_bulk_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(kf_smem_addr(bar)), "r"(parity) : "memory");
}
// Shared memory the block's threads read and the copy engine overwrites next: the reads come first.
__device__ __forceinline__ void kf_bulk_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif
// 16-bit float storage (a convolution's fp16 or bf16 copies, codegen/emit_conv.cpp): bit patterns in unsigned
// short, rounded to nearest even; the host's forms (the CPU runner's) through _Float16 and bit arithmetic.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned short kf_to_f16(float x) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h; }
__device__ __forceinline__ float kf_from_f16(unsigned short h) { float x; asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h)); return x; }
__device__ __forceinline__ unsigned short kf_to_bf16(float x) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h; }
__device__ __forceinline__ float kf_from_bf16(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
#else
inline unsigned short kf_to_f16(float x) { return std::bit_cast<unsigned short>((_Float16)x); }
inline float kf_from_f16(unsigned short h) { return (float)std::bit_cast<_Float16>(h); }
inline unsigned short kf_to_bf16(float x) {
  unsigned u = std::bit_cast<unsigned>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // NaN stays NaN
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float kf_from_bf16(unsigned short h) { return std::bit_cast<float>((unsigned)h << 16); }
#endif
// The power of two e that puts m (an operand's largest finite magnitude) in [2^14, 2^15): the scale of a
// product's fp16 copies (codegen/emit_matmul_split.cpp); 0 for 0 and NaN; within +-63, so that alpha =
// 2^-(ea + eb) stays a normal float (operands beyond ~2^78 then overflow fp16: inf in the result).
__device__ __forceinline__ int kf_half_scale(float m) {
  if (!(m > 0.f) || isinf(m)) return 0;
  int e;
  frexpf(m, &e);  // m = f 2^e, f in [0.5, 1)
  return min(max(15 - e, -63), 63);
}
__device__ __forceinline__ float kf_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float kf_softplus(float x, float beta, float threshold) {
  return beta * x > threshold ? x : log1pf(expf(beta * x)) / beta;
}
__device__ __forceinline__ float kf_gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float kf_gelu_tanh(float x) {
  return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float kf_selu(float x) {
  return 1.0507009873554804934f * (x > 0.f ? x : 1.6732632423543772848f * expm1f(x));
}
__device__ __forceinline__ float kf_max(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ float kf_min(float a, float b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ float kf_sign(float x) { return (float)((x > 0.f) - (x < 0.f)); }

// Reductions. Each combine is associative; the (value, index) pair keeps the first index of the
// extreme value, as torch.argmax does, so the combine order does not change the answer.
// Two accumulator types per op: L is a thread's running value over its elements (float: a few cheap ops per
// element keep the kernel memory-bound; per-element double arithmetic measured 10-45% slower on LayerNorm),
// T what threads combine in (double for sums, products and moments, so the cross-thread order adds no
// rounding). widen turns L into T; finish turns a row's T (over n elements) into the float the kernel goes on with.
// The variance: each thread keeps its moments about its first element x0 (sum and sum of squares of x - x0,
// in float: no cancellation, x0 is near the data), widens them to raw moments in double, and the row
// finishes as E[x^2] - E[x]^2 in double: one walk instead of two, and ~1e-16 * (mean/std)^2 relative error.
struct KfMoments { double s, q; };
struct KfShifted { float x0, s, q, n; };
// A float running value; `step` combines it with an element in float.
#define KF_FLOAT_LOCAL(T, step) \
  typedef float L; __device__ static L add(L a, float x) { return step; } __device__ static T widen(L a) { return a; } \
  __device__ static float finish(T v, double) { return (float)v; }
// A sum's running value is compensated (Kahan): a thread may walk thousands of elements of one row in order,
// and plain float addition then loses ~sqrt(n) ulps of the partial sums, more than 1e-4 of a row whose total
// is near zero. Three more float adds per element are free in a memory-bound loop. An infinite running sum
// keeps no compensation ((inf - s) - inf would be NaN): inf stays inf, as torch.sum's, and inf - inf is NaN.
struct KfKahan { float s, c; };
struct KfSum  { typedef double T; typedef KfKahan L; __device__ static T init() { return 0.0; }
                __device__ static L local_init() { return {0.f, 0.f}; }
                __device__ static L add(L a, float x) { float y = x - a.c, t = a.s + y; return {t, isinf(t) ? 0.f : (t - a.s) - y}; }
                __device__ static T widen(L a) { return (double)a.s - (double)a.c; }
                __device__ static float finish(T v, double) { return (float)v; }
                __device__ static T f(T a, T b) { return a + b; } };
struct KfProd { typedef double T; __device__ static T init() { return 1.0; } __device__ static float local_init() { return 1.f; }
                __device__ static T f(T a, T b) { return a * b; } KF_FLOAT_LOCAL(T, a * x) };
struct KfMax  { typedef float T; __device__ static T init() { return -KF_INF; } __device__ static float local_init() { return -KF_INF; }
                __device__ static T f(T a, T b) { return kf_max(a, b); } KF_FLOAT_LOCAL(T, kf_max(a, x)) };
struct KfMin  { typedef float T; __device__ static T init() { return KF_INF; } __device__ static float local_init() { return KF_INF; }
                __device__ static T f(T a, T b) { return kf_min(a, b); } KF_FLOAT_LOCAL(T, kf_min(a, x)) };
struct KfVar {
  typedef KfMoments T;
  typedef KfShifted L;
  __device__ static T init() { return {0.0, 0.0}; }
  __device__ static L local_init() { return {0.f, 0.f, 0.f, 0.f}; }
  __device__ static L add(L a, float x) {
    if (a.n == 0.f) a.x0 = x;
    float d = x - a.x0;
    return {a.x0, a.s + d, fmaf(d, d, a.q), a.n + 1.f};
  }
  __device__ static T widen(L a) {
    double x0 = a.x0, s = a.s;
    return {s + a.n * x0, a.q + 2.0 * x0 * s + a.n * x0 * x0};
  }
  __device__ static T f(T a, T b) { return {a.s + b.s, a.q + b.q}; }
  __device__ static float finish(T v, double n) { double m = v.s / n; return (float)fmax(v.q / n - m * m, 0.0); }
};
// Online softmax statistic (partition.h, KernelGroup::online_max): sum(exp(x - m)) over a row whose max m is
// found in the same walk. A thread keeps its running max and the compensated sum of exp(x - max so far),
// rescaled by exp(old - new) when the max grows (the product's rounding error kept in the compensation);
// threads combine (sum, max) pairs in double. exp(-inf - m) adds nothing, so masked (-inf) elements cost no
// NaN; a NaN or +inf element makes the sum NaN in every strategy, as exp(x - max(x)) does (inf - inf). A row
// of -inf only sums to 0, where exp(x - max(x)) gives NaN: the softmax outputs are NaN either way.
struct KfOnline { double d; float m; };
struct KfOnlineLocal { float m, d, c; };
struct KfOnlineSumExp {
  typedef KfOnline T;
  typedef KfOnlineLocal L;
  __device__ static T init() { return {0.0, -KF_INF}; }
  __device__ static L local_init() { return {-KF_INF, 0.f, 0.f}; }
  // Branch-free, so that an unrolled walk issues its loads together: with a branch per element the compiler
  // kept each load behind the previous element's branches, one load in flight per thread
  // (24_softmax_last_dim 2.6 ms fused, against 1.5 for three plain walks). Two exps an element; a scale of
  // exactly 1 (the max did not grow) leaves the sum and its compensation exact.
  __device__ static L add(L a, float x) {
    const float m = fmaxf(a.m, x);                       // a NaN x leaves the max (its exp makes the sum NaN)
    const float scale = a.m == m ? 1.f : expf(a.m - m);  // 0 while the max was -inf
    const float e = x == -KF_INF ? 0.f : expf(x - m);    // x = +inf: inf - inf, NaN, as exp(x - max(x))
    const float p = a.d * scale;
    const float c = a.c * scale - fmaf(a.d, scale, -p);  // d - c scaled exactly but for the scale's own rounding
    const float y = e - c, t = p + y;
    return {m, t, (t - p) - y};
  }
  __device__ static T widen(L a) { return {(double)a.d - (double)a.c, a.m}; }
  // The pair with the larger max keeps its sum; the other's is scaled by one float exp (the rescale's 1e-7
  // relative error is far inside the strict tier). Two double exps per combine made the block reduction of a
  // 1024-thread row cost more than its walk (24_softmax_last_dim 3.4 ms fused, against 1.5 for the three-walk
  // kernel before).
  __device__ static T f(T a, T b) {
    if (b.m > a.m) { T t = a; a = b; b = t; }  // a holds the larger max (add() never makes a NaN max)
    if (a.m == -KF_INF) return {a.d + b.d, a.m};
    return {a.d + b.d * (double)expf(b.m - a.m), a.m};
  }
  __device__ static float finish(T v, double) { return (float)v.d; }
};
template <class T> __device__ __forceinline__ T kf_shfl_xor(T v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ KfMoments kf_shfl_xor(KfMoments v, int o) { return {kf_shfl_xor(v.s, o), kf_shfl_xor(v.q, o)}; }
__device__ __forceinline__ KfOnline kf_shfl_xor(KfOnline v, int o) { return {kf_shfl_xor(v.d, o), kf_shfl_xor(v.m, o)}; }

struct KfArg { float v; i64 i; };
// A thread's own walk visits increasing indices (every strategy's loop does), so its step is simpler than
// the general combine: a later element wins only if strictly better, or if it is the first NaN.
template <bool IS_MAX> __device__ __forceinline__ KfArg kf_arg_step(KfArg a, float v, i64 i) {
  bool take = a.i < 0 || (IS_MAX ? v > a.v : v < a.v) || (v != v && a.v == a.v);
  return take ? KfArg{v, i} : a;
}
template <bool IS_MAX> __device__ __forceinline__ KfArg kf_arg_combine(KfArg a, KfArg b) {
  bool take_b = IS_MAX ? (b.v > a.v || (b.v == a.v && b.i < a.i)) : (b.v < a.v || (b.v == a.v && b.i < a.i));
  bool a_nan = a.v != a.v, b_nan = b.v != b.v;  // NaN wins, first NaN first, as torch.argmax
  if (a_nan || b_nan) take_b = b_nan && (!a_nan || b.i < a.i);
  if (a.i < 0) take_b = true;
  if (b.i < 0) take_b = false;
  return take_b ? b : a;
}

template <class Op> __device__ __forceinline__ typename Op::T kf_warp_reduce(typename Op::T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = Op::f(v, kf_shfl_xor(v, o));
  return v;
}
template <bool IS_MAX> __device__ __forceinline__ KfArg kf_warp_arg_reduce(KfArg a) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    KfArg b = {__shfl_xor_sync(0xffffffffu, a.v, o), __shfl_xor_sync(0xffffffffu, a.i, o)};
    a = kf_arg_combine<IS_MAX>(a, b);
  }
  return a;
}
// Block-wide reduction; every thread gets the result. `scratch` holds 64 doubles: 32 of any Op::T.
template <class Op> __device__ __forceinline__ typename Op::T kf_block_reduce(typename Op::T v, double* scratch_) {
  typename Op::T* scratch = reinterpret_cast<typename Op::T*>(scratch_);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  v = kf_warp_reduce<Op>(v);
  __syncthreads();  // scratch may still be read by the previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < nwarps ? scratch[lane] : Op::init();
  return kf_warp_reduce<Op>(v);
}
// Two statistics reduced across the block together: each as kf_block_reduce would, one pair of barriers for
// both. `scratch` holds 128 doubles: 32 of each Op::T.
template <class A, class B> struct KfPair { typename A::T a; typename B::T b; };
template <class A, class B>
__device__ __forceinline__ KfPair<A, B> kf_block_reduce2(typename A::T a, typename B::T b, double* scratch_) {
  typename A::T* sa = reinterpret_cast<typename A::T*>(scratch_);
  typename B::T* sb = reinterpret_cast<typename B::T*>(scratch_ + 64);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  a = kf_warp_reduce<A>(a);
  b = kf_warp_reduce<B>(b);
  __syncthreads();  // scratch may still be read by the previous reduction
  if (lane == 0) sa[warp] = a, sb[warp] = b;
  __syncthreads();
  a = lane < nwarps ? sa[lane] : A::init();
  b = lane < nwarps ? sb[lane] : B::init();
  return {kf_warp_reduce<A>(a), kf_warp_reduce<B>(b)};
}
template <bool IS_MAX> __device__ __forceinline__ KfArg kf_block_arg_reduce(KfArg a, KfArg* scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  a = kf_warp_arg_reduce<IS_MAX>(a);
  __syncthreads();
  if (lane == 0) scratch[warp] = a;
  __syncthreads();
  a = lane < nwarps ? scratch[lane] : KfArg{0.f, -1};
  return kf_warp_arg_reduce<IS_MAX>(a);
}
// Rows split across a thread-block cluster (emit_row.cpp, the block strategy with chunks > 1; sm_90): the block's
// rank, a barrier of the whole cluster (release/acquire: shared-memory writes before it are seen after it), and
// a pointer into another block's shared memory (distributed shared memory). Each reduction writes the block's
// total to one of two slots (round & 1), waits for the cluster, and folds the C totals in rank order, so every
// block gets the same bits; the slot is written again two reductions later, after a barrier every block passes
// only once done reading it.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned kf_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void kf_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <class T> __device__ __forceinline__ const T* kf_cluster_map(const T* p, unsigned rank) {
  unsigned long long q;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(rank));
  return reinterpret_cast<const T*>(q);
}
// `slots` is slot 0 of this thread's value; slot 1 lies `stride` values on. Threads below `writers` write.
template <class T, int C, class F>
__device__ __forceinline__ T kf_cluster_fold(T v, T* slots, unsigned& round, F f, unsigned writers = 1, int stride = 1) {
  T* const slot = slots + (round++ & 1u) * stride;
  if (threadIdx.x < writers) *slot = v;
  kf_cluster_sync();
  T t = *kf_cluster_map(slot, 0);
#pragma unroll
  for (int q = 1; q < C; ++q) t = f(t, *kf_cluster_map(slot, q));
  return t;
}
// `part` holds two Op::T (32 bytes), `apart` two KfArg.
template <class Op, int C> __device__ __forceinline__ typename Op::T kf_cluster_reduce(typename Op::T v, double* scratch, double* part,
                                                                                    unsigned& round) {
  typedef typename Op::T T;
  return kf_cluster_fold<T, C>(kf_block_reduce<Op>(v, scratch), reinterpret_cast<T*>(part), round, [](T a, T b) { return Op::f(a, b); });
}
template <bool IS_MAX, int C> __device__ __forceinline__ KfArg kf_cluster_arg_reduce(KfArg a, KfArg* scratch, KfArg* apart, unsigned& round) {
  return kf_cluster_fold<KfArg, C>(kf_block_arg_reduce<IS_MAX>(a, scratch), apart, round,
                                   [](KfArg x, KfArg y) { return kf_arg_combine<IS_MAX>(x, y); });
}
#endif
// A value stored at the same place in the shared memory of block `rank` of the cluster (the batch-split
// recurrence, emit_recurrence_cluster.cpp, hands its units' new state to every block of its cluster so). The CPU
// runs clusters of one block.
__device__ __forceinline__ void kf_cluster_store(float* p, unsigned rank, float v) {
#ifdef __CUDA_ARCH__
  unsigned long long q;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(rank));
  *reinterpret_cast<float*>(q) = v;
#else
  (void)rank;
  *p = v;
#endif
}
// A recurrence's persistent kernel (emit_recurrence.cpp): a value published with its step's tag in one 8-byte
// store, and read with its tag in one 8-byte load (the two halves of an aligned 8-byte access are never seen
// apart). Volatile: through L2, never a stale L1 line.
__device__ __forceinline__ void kf_publish(unsigned* at, float value, unsigned tag) {
#ifdef __CUDA_ARCH__
  asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};" :: "l"(at), "r"(__float_as_uint(value)), "r"(tag) : "memory");
#else
  at[0] = std::bit_cast<unsigned>(value);
  at[1] = tag;
#endif
}
// One look at a published value (value, tag): a reader issues the loads of its many values together and loads
// again those whose tag is older than the step's (emit_recurrence.cpp).
__device__ __forceinline__ uint2 kf_load_published(const unsigned* at) {
#ifdef __CUDA_ARCH__
  uint2 v;
  asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(at) : "memory");
  return v;
#else
  return uint2{at[0], at[1]};
#endif
}
// A float copied from global to shared memory without the thread waiting (sm_80's cp.async), in groups the
// thread commits and later waits for: all but the `pending` most recent groups done. The CPU copies at once.
__device__ __forceinline__ void kf_copy_async(float* dst, const float* src) {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
#else
  *dst = *src;
#endif
}
__device__ __forceinline__ void kf_copy_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// 16 bytes copied the same way (cp.async.cg: through L2 only), both ends 16-byte aligned; `bytes` 16, or 0 to fill
// dst with zeros (a tile's rows and columns beyond its operand: src is then not read).
__device__ __forceinline__ void kf_copy16_async(void* dst, const void* src, unsigned bytes) {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(bytes)
               : "memory");
#else
  if (bytes) std::memcpy(dst, src, 16);
  else std::memset(dst, 0, 16);
#endif
}
template <int PENDING> __device__ __forceinline__ void kf_copy_async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;" :: "n"(PENDING) : "memory");
#endif
}
// FlashAttention's running statistics of a row (emit_attention.cpp): its max so far m, updated with a tile's max mx.
// Returns the base the tile's exponents take, 0 while no score is finite (exp(-inf - 0) = 0, never -inf + inf), and
// sets alpha, the factor rescaling what was summed before.
__device__ __forceinline__ float kf_online_max(float& m, float mx, float& alpha) {
  const float mnew = fmaxf(m, mx), base = mnew == -KF_INF ? 0.f : mnew;
  alpha = expf(m - base);
  m = mnew;
  return base;
}
// e^x by ex2.approx (2 ulp) of x log2(e): for a half-precision task's attention, whose probabilities are then rounded
// to the dtype's 11 (or 8) significant bits, far above what this adds (x's rounding in the product: |x| 2^-24).
__device__ __forceinline__ float kf_exp_approx(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
#else
  return expf(x);
#endif
}
// TF32 tensor cores (sm_80+; emit_matmul_mma.cpp, emit_attention.cpp). kf_tf32: a finite x rounded to TF32 as
// cvt.rna.tf32.f32 rounds it (half an ulp added to the magnitude, the 13 low bits dropped), in two integer
// operations. Not for NaN: the carry out of a large payload would reach the sign.
__device__ __forceinline__ unsigned kf_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }
// x = big + small, both TF32 (small is only needed, and only computed, under split precision: `split`, a constant
// the compiler folds), in five plain fp32 and integer operations and no test: the split runs for every fragment
// element a warp reads, where the compiler's cvt.rna costs four and a NaN test. big is Veltkamp's split of x into
// 11 + 13 significant bits (c = x (2^13 + 1), big = c - (c - x): x rounded to nearest at 11 bits, exactly a TF32
// value), with _rn intrinsics that the compiler never fuses into an fma; small = x - big is exact and rounded to
// TF32. NaN and infinite x give a NaN big part (so NaN results, which the verifier rejects), as does |x| > 4e34,
// where c overflows (ir/tf32.h, split_tf32, is the same arithmetic).
__device__ __forceinline__ void kf_split(float x, unsigned& big, unsigned& small, bool split) {
  const float c = __fmul_rn(x, 8193.f), hi = __fsub_rn(c, __fsub_rn(c, x));
  big = __float_as_uint(hi);
  small = split ? kf_tf32(__fsub_rn(x, hi)) : 0u;
}
// c += a b for a warp's 16 x 8 tile: a (16 x 8, rows) and b (8 x 8, columns) TF32 fragments, fp32 sums
// (mma.sync.m16n8k8's layouts: lane = 4 g + t holds a[g][t], a[g+8][t], a[g][t+4], a[g+8][t+4], b[t][g], b[t+4][g],
// c[g][2t], c[g][2t+1], c[g+8][2t], c[g+8][2t+1]). The CPU runner's emulation computes the same tile.
__device__ __forceinline__ void kf_mma(float* c, const unsigned* a, const unsigned* b) {
#ifdef __CUDA_ARCH__
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  kf_mma_emulated<1>(c, a, b, [](unsigned word, unsigned) { return __uint_as_float(word); });
#endif
}
// c += a b for a warp's 16 x 16 times 16 x 8 tile of 16-bit values (mma.sync.m16n8k16, fp16 or bf16, fp32 sums): lane
// 4 g + t holds a's rows g and g + 8 at columns 2t, 2t + 1 and 2t + 8, 2t + 9 (two values a register, the lower column
// in the low half), b's rows 2t, 2t + 1 and 2t + 8, 2t + 9 of column g, and c as kf_mma's.
template <bool BF16> __device__ __forceinline__ void kf_mma16(float* c, const unsigned* a, const unsigned* b) {
#ifdef __CUDA_ARCH__
  if (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  kf_mma_emulated<2>(c, a, b, [](unsigned word, unsigned i) {
    const unsigned short h = (unsigned short)(i ? word >> 16 : word & 0xffffu);  // the lower column in the low half
    return BF16 ? kf_from_bf16(h) : kf_from_f16(h);
  });
#endif
}
// Two floats as a register of two 16-bit values, the first in the low half: a pair of an m16n8k16 fragment.
template <bool BF16> __device__ __forceinline__ unsigned kf_pack_half2(float lo, float hi) {
  return unsigned(BF16 ? kf_to_bf16(lo) : kf_to_f16(lo)) | unsigned(BF16 ? kf_to_bf16(hi) : kf_to_f16(hi)) << 16;
}
// The same pair as two: big, the values rounded to the dtype, and small, what that rounding dropped, rounded too (a
// bf16 attention's probabilities: their 8 significant bits alone put its outputs past 1e-2 where the scores are
// large, as PyTorch's own bf16 attention's are; big + small keeps ~16 bits for a second product).
template <bool BF16> __device__ __forceinline__ void kf_split_half2(float lo, float hi, unsigned& big, unsigned& small) {
  const unsigned short l = BF16 ? kf_to_bf16(lo) : kf_to_f16(lo), h = BF16 ? kf_to_bf16(hi) : kf_to_f16(hi);
  big = unsigned(l) | unsigned(h) << 16;
  const float dl = lo - (BF16 ? kf_from_bf16(l) : kf_from_f16(l)), dh = hi - (BF16 ? kf_from_bf16(h) : kf_from_f16(h));
  small = kf_pack_half2<BF16>(dl, dh);
}
// Two 8 x 8 tiles of 16-bit values from shared memory into a warp's registers, transposed (ldmatrix .x2 .trans): lanes
// 0-7 name the rows of the first tile, lanes 8-15 the second's (16-byte aligned); lane 4 g + t receives, of tile m,
// rows 2t and 2t + 1 of column g in r[m] (the lower row in the low half): kf_mma16's b fragment of the rows k .. k + 15
// of a row-major [k][n] tile, 8 columns wide. The CPU runner's emulation gathers the same values.
__device__ __forceinline__ void kf_ldmatrix_x2_trans(unsigned* r, const unsigned short* row) {
#ifdef __CUDA_ARCH__
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1]) : "r"((unsigned)__cvta_generic_to_shared(row)));
#else
  kf_ldmatrix_trans_emulated(r, row);
#endif
}
)CUDA";
  return src;
}

}  // namespace kforge
