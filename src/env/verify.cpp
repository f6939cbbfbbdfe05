#include "env/verify.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "ir/error.h"
#include "runtime/driver.h"
#include "runtime/target.h"

namespace kforge {

namespace {
// A tolerance as a person writes it, 1e-4, 3.5e-4, 0.01 (std::to_string gives 0.000100): three significant
// digits, trailing zeros dropped, powers of ten below 1e-3.
std::string short_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, x != 0 && std::fabs(x) < 1e-3 ? "%.2e" : "%.3g", x);
  std::string s = buf;
  size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  while (mantissa.find('.') != std::string::npos && (mantissa.back() == '0' || mantissa.back() == '.')) mantissa.pop_back();
  int power = std::stoi(exponent);
  return mantissa + "e" + std::to_string(power);
}

// result[0..5]: bad_strict, bad_relaxed, nonfinite, first_bad (min), max_abs_err bits, count
const char* kCompareSource = R"CUDA(
typedef unsigned long long u64;
__device__ __forceinline__ float kf_value(float x, int) { return x; }
__device__ __forceinline__ float kf_value(unsigned short h, int bf16) {  // half-precision bit patterns
  if (bf16) return __uint_as_float((unsigned)h << 16);
  float x; asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h)); return x;
}
template <typename T>
__device__ void kf_compare(const T* __restrict__ out, const T* __restrict__ ref, long long n, int bf16,
                           float tol_strict, float tol_relaxed, u64* result) {
  u64 bad_s = 0, bad_r = 0, nonfinite = 0; long long first = n; float max_err = 0.f;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float o = kf_value(out[i], bf16), r = kf_value(ref[i], bf16);
    if (!isfinite(o) || !isfinite(r)) {
      if (!(isinf(o) && isinf(r) && o == r)) { ++nonfinite; if (i < first) first = i; }
      continue;
    }
    float err = fabsf(o - r);
    max_err = fmaxf(max_err, err);
    if (err > tol_strict + tol_strict * fabsf(r)) { ++bad_s; if (i < first) first = i; }
    if (err > tol_relaxed + tol_relaxed * fabsf(r)) ++bad_r;
  }
  if (bad_s) atomicAdd(&result[0], bad_s);
  if (bad_r) atomicAdd(&result[1], bad_r);
  if (nonfinite) atomicAdd(&result[2], nonfinite);
  if (first < n) atomicMin(&result[3], (u64)first);
  atomicMax(&result[4], (u64)__float_as_uint(max_err));  // non-negative floats order like their bits
}
extern "C" __global__ void kf_compare_f32(const float* __restrict__ out, const float* __restrict__ ref, long long n,
                                          float tol_strict, float tol_relaxed, u64* result) {
  kf_compare(out, ref, n, 0, tol_strict, tol_relaxed, result);
}
extern "C" __global__ void kf_compare_half(const unsigned short* __restrict__ out, const unsigned short* __restrict__ ref,
                                           long long n, int bf16, float tol_strict, float tol_relaxed, u64* result) {
  kf_compare(out, ref, n, bf16, tol_strict, tol_relaxed, result);
}
// An order-independent fingerprint of a buffer (sum and xor of its 32-bit words, mixed with the index):
// the same before and after a run unless the run wrote into it.
extern "C" __global__ void kf_fingerprint(const unsigned int* __restrict__ p, long long words, u64* result) {
  u64 sum = 0, mix = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x) {
    u64 w = p[i];
    sum += w * (u64)(2 * i + 1);
    mix ^= (w << (i & 31)) | (w >> (32 - (i & 31)));
  }
  atomicAdd(&result[0], sum);
  atomicXor(&result[1], mix);
}
extern "C" __global__ void kf_compare_exact(const unsigned char* __restrict__ out, const unsigned char* __restrict__ ref,
                                            long long n, int elem_bytes, u64* result) {
  u64 bad = 0; long long first = n;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    bool same = true;
    for (int b = 0; b < elem_bytes; ++b) same = same && out[i * elem_bytes + b] == ref[i * elem_bytes + b];
    if (!same) { ++bad; if (i < first) first = i; }
  }
  if (bad) { atomicAdd(&result[0], bad); atomicAdd(&result[1], bad); }
  if (first < n) atomicMin(&result[3], (u64)first);
}
)CUDA";
}  // namespace

const char* verification_source() { return kCompareSource; }

SetTolerances::SetTolerances(std::vector<std::vector<double>> strict, int num_sets, int num_outputs, const Tolerance& global)
    : strict_(std::move(strict)) {
  if (strict_.empty()) return;
  if (int(strict_.size()) != num_sets)
    throw UserError("strict tolerances for " + std::to_string(strict_.size()) + " input sets; the task has " +
                    std::to_string(num_sets));
  for (int s = 0; s < num_sets; ++s) {
    if (int(strict_[s].size()) != num_outputs)
      throw UserError("set " + std::to_string(s) + ": strict tolerances for " + std::to_string(strict_[s].size()) +
                      " outputs; the graph returns " + std::to_string(num_outputs));
    for (int j = 0; j < num_outputs; ++j) {
      double t = strict_[s][j];
      if (!(t >= global.strict && t <= global.relaxed))  // NaN fails too
        throw UserError("set " + std::to_string(s) + ", output " + std::to_string(j) + ": strict tolerance " +
                        short_number(t) + " outside [" + short_number(global.strict) + ", " +
                        short_number(global.relaxed) + "] (the strict tier never goes below its own or above the relaxed one)");
    }
  }
}

Tolerance SetTolerances::at(const Tolerance& global, int set, int output) const {
  if (strict_.empty()) return global;
  return {strict_.at(set).at(output), global.relaxed};
}

std::vector<std::vector<double>> SetTolerances::rows(int num_sets, int num_outputs, const Tolerance& global) const {
  if (!strict_.empty()) return strict_;
  return std::vector<std::vector<double>>(size_t(num_sets), std::vector<double>(size_t(num_outputs), global.strict));
}

std::string CompareResult::describe(const std::string& name) const {
  if (strict()) return name + ": all " + std::to_string(count) + " elements match (max abs err " + std::to_string(max_abs_err) + ")";
  std::string s = name + ": " + std::to_string(bad_strict) + " of " + std::to_string(count) + " elements outside " +
                  short_number(tol.strict) + ", " + std::to_string(bad_relaxed) + " outside " + short_number(tol.relaxed) +
                  ", " + std::to_string(nonfinite) + " NaN/Inf";
  if (first_bad >= 0)
    s += "; first at index " + std::to_string(first_bad) + ": got " + std::to_string(got) + ", expected " + std::to_string(expected);
  return s;
}

Verifier::Verifier(const Compiler& compiler) {
  const Driver& d = driver();
  ensure_context();
  CompileResult r = compiler.compile(verification_source(), "kf_compare");
  if (!r.ok) throw InternalError("verification kernel does not compile:\n" + r.log);
  KF_CU(d.cuModuleLoadData(&module_, r.cubin.data()));
  KF_CU(d.cuModuleGetFunction(&f32_, module_, "kf_compare_f32"));
  KF_CU(d.cuModuleGetFunction(&half_, module_, "kf_compare_half"));
  KF_CU(d.cuModuleGetFunction(&exact_, module_, "kf_compare_exact"));
  KF_CU(d.cuModuleGetFunction(&fingerprint_, module_, "kf_fingerprint"));
  KF_CU(d.cuMemAlloc(&result_, 6 * sizeof(uint64_t)));
}

Verifier::~Verifier() {
  if (!driver_available()) return;
  if (result_) driver().cuMemFree(result_);
  if (module_) driver().cuModuleUnload(module_);
}

std::pair<uint64_t, uint64_t> Verifier::fingerprint(CUdeviceptr p, size_t bytes, CUstream stream) {
  const Driver& d = driver();
  uint64_t init[6] = {0, 0, 0, 0, 0, 0};
  KF_CU(d.cuStreamSynchronize(stream));
  KF_CU(d.cuMemcpyHtoD(result_, init, sizeof init));
  long long words = (long long)(bytes / 4);
  unsigned grid = unsigned(std::min<int64_t>(int64_t(Target::here().sms) * 8, (words + 255) / 256 + 1));
  void* args[] = {&p, &words, &result_};
  KF_CU(d.cuLaunchKernel(fingerprint_, grid, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  KF_CU(d.cuStreamSynchronize(stream));
  uint64_t res[6];
  KF_CU(d.cuMemcpyDtoH(res, result_, sizeof res));
  return {res[0], res[1]};
}

void Verifier::poison(CUdeviceptr p, size_t bytes, CUstream stream) { KF_CU(driver().cuMemsetD8Async(p, 0xFF, bytes, stream)); }

CompareResult Verifier::compare(CUdeviceptr out, CUdeviceptr ref, int64_t n, DType dtype, const Tolerance& tol, CUstream stream) {
  const Driver& d = driver();
  uint64_t init[6] = {0, 0, 0, uint64_t(n), 0, uint64_t(n)};
  KF_CU(d.cuStreamSynchronize(stream));
  KF_CU(d.cuMemcpyHtoD(result_, init, sizeof init));
  long long count = n;
  unsigned grid = unsigned(std::min<int64_t>(int64_t(Target::here().sms) * 8, (n + 255) / 256 + 1));
  float ts = float(tol.strict), tr = float(tol.relaxed);
  if (dtype == DType::f32) {
    void* args[] = {&out, &ref, &count, &ts, &tr, &result_};
    KF_CU(d.cuLaunchKernel(f32_, grid, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  } else if (is_half(dtype)) {
    int bf16 = dtype == DType::bf16;
    void* args[] = {&out, &ref, &count, &bf16, &ts, &tr, &result_};
    KF_CU(d.cuLaunchKernel(half_, grid, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  } else {
    int eb = int(dtype_size(dtype));
    void* args[] = {&out, &ref, &count, &eb, &result_};
    KF_CU(d.cuLaunchKernel(exact_, grid, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  }
  KF_CU(d.cuStreamSynchronize(stream));
  uint64_t res[6];
  KF_CU(d.cuMemcpyDtoH(res, result_, sizeof res));
  CompareResult c;
  c.count = n;
  c.tol = tol;
  c.bad_strict = int64_t(res[0]);
  c.bad_relaxed = int64_t(res[1]);
  c.nonfinite = int64_t(res[2]);
  float me;
  uint32_t bits = uint32_t(res[4]);
  std::memcpy(&me, &bits, 4);
  c.max_abs_err = me;
  if (int64_t(res[3]) < n) {
    c.first_bad = int64_t(res[3]);
    if (dtype == DType::f32) {
      float g = 0, e = 0;
      KF_CU(d.cuMemcpyDtoH(&g, out + c.first_bad * 4, 4));
      KF_CU(d.cuMemcpyDtoH(&e, ref + c.first_bad * 4, 4));
      c.got = g;
      c.expected = e;
    } else if (is_half(dtype)) {
      uint16_t g = 0, e = 0;
      KF_CU(d.cuMemcpyDtoH(&g, out + c.first_bad * 2, 2));
      KF_CU(d.cuMemcpyDtoH(&e, ref + c.first_bad * 2, 2));
      c.got = half_value(dtype, g);
      c.expected = half_value(dtype, e);
    }
  }
  return c;
}

}  // namespace kforge
