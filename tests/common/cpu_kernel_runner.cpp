#include "common/cpu_kernel_runner.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "codegen/device_prelude.h"
#include "common/scratch_path.h"

namespace kforge::testing {

namespace {

const char* kEmulation = R"(#include <algorithm>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <thread>
#include <vector>
typedef long long i64;
struct KfDim { unsigned x = 0; };
static thread_local KfDim threadIdx, blockIdx;
static KfDim gridDim{1};
static KfDim blockDim;
static std::barrier<>* kf_barrier;
#define __global__
#define __shared__ static
#define __launch_bounds__(...)
using std::max;
using std::min;
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
#define __restrict__
#define __syncthreads() kf_barrier->arrive_and_wait()
#define __syncwarp() kf_barrier->arrive_and_wait()  // kernels whose every thread of the block reaches it together
#define __device__
#define __forceinline__ inline
#define __int_as_float(i) std::bit_cast<float>(int(i))
#define __uint_as_float(u) std::bit_cast<float>((unsigned)(u))
#define __float_as_uint(f) std::bit_cast<unsigned>((float)(f))
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }  // rounded, never fused
inline float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
// Arguments arrive as float pointers; a kernel parameter of another element type (an i64 index output) takes one.
struct KfAnyPtr { float* p; template <class T> operator T*() const { return reinterpret_cast<T*>(p); } };
// A warp shuffle for kernels whose every thread of the block shuffles together (all of them reach each call): each
// thread posts its value, the block meets, each reads its partner's, the block meets again.
template <class T> T __shfl_xor_sync(unsigned, T v, int lane, int = 32) {
  static_assert(sizeof(T) <= 8);
  alignas(8) static unsigned char posted[1024][8];
  std::memcpy(posted[threadIdx.x], &v, sizeof(T));
  kf_barrier->arrive_and_wait();
  T r;
  std::memcpy(&r, posted[threadIdx.x ^ unsigned(lane)], sizeof(T));
  kf_barrier->arrive_and_wait();
  return r;
}
// The same for a shuffle up: lane l reads lane l - delta of its warp, its own value where that is below lane 0.
template <class T> T __shfl_up_sync(unsigned, T v, unsigned delta, int = 32) {
  static_assert(sizeof(T) <= 8);
  alignas(8) static unsigned char posted[1024][8];
  std::memcpy(posted[threadIdx.x], &v, sizeof(T));
  kf_barrier->arrive_and_wait();
  T r = v;
  if ((threadIdx.x & 31u) >= delta) std::memcpy(&r, posted[threadIdx.x - delta], sizeof(T));
  kf_barrier->arrive_and_wait();
  return r;
}
// mma.sync (m16n8k8 on TF32 values, E = 1 a register; m16n8k16 on 16-bit ones, E = 2) with fp32 sums, for kernels
// whose every thread of the block reaches it together: each lane posts its fragments, the block meets, each lane
// computes its four results from its warp's, the block meets again. `value(word, i)` is the register's i-th value.
template <int E, class F> void kf_mma_emulated(float* c, const unsigned* a, const unsigned* b, F value) {
  static unsigned posted[1024][6];
  for (int i = 0; i < 4; ++i) posted[threadIdx.x][i] = a[i];
  posted[threadIdx.x][4] = b[0], posted[threadIdx.x][5] = b[1];
  kf_barrier->arrive_and_wait();
  const unsigned warp = threadIdx.x & ~31u, g = (threadIdx.x & 31u) >> 2, t = threadIdx.x & 3u, half_k = 4 * E;
  // Lane 4 g + t holds a's rows g, g + 8 and b's column g; k runs along its t and, past half_k, its next register.
  auto A = [&](unsigned r, unsigned k) {
    return value(posted[warp + (r % 8) * 4 + (k % half_k) / E][(r >= 8) + 2 * (k >= half_k)], k % E);
  };
  auto B = [&](unsigned k, unsigned n) { return value(posted[warp + n * 4 + (k % half_k) / E][4 + (k >= half_k)], k % E); };
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
    for (unsigned k = 0; k < 2 * half_k; ++k) c[i] += A(row, k) * B(k, col);
  }
  kf_barrier->arrive_and_wait();
}
// ldmatrix .x2 .trans for kernels whose every thread of the block reaches it together: each lane posts its row's
// address, the block meets, each lane gathers its values from its warp's lanes 0-15, the block meets again.
inline void kf_ldmatrix_trans_emulated(unsigned* r, const unsigned short* row) {
  static const unsigned short* posted[1024];
  posted[threadIdx.x] = row;
  kf_barrier->arrive_and_wait();
  const unsigned warp = threadIdx.x & ~31u, g = (threadIdx.x & 31u) >> 2, t = threadIdx.x & 3u;
  for (unsigned m = 0; m < 2; ++m)
    r[m] = unsigned(posted[warp + 8 * m + 2 * t][g]) | unsigned(posted[warp + 8 * m + 2 * t + 1][g]) << 16;
  kf_barrier->arrive_and_wait();
}
)";

}  // namespace

bool host_compiler_available() { return std::system("c++ --version > /dev/null 2>&1") == 0; }

void run_on_cpu(const PlanKernel& k, const std::vector<float*>& args, int64_t grid) {
  if (grid < 1) throw std::runtime_error(k.name + ": a grid of " + std::to_string(grid) + " blocks");
  static int built = 0;
  const std::string stem = scratch_path("cpu_" + k.name + "_" + std::to_string(built++));
  const size_t at = k.source.find("extern \"C\" __global__");
  if (at == std::string::npos) throw std::runtime_error(k.name + ": no kernel entry in its source");
  std::string call = k.name + "(";
  for (size_t i = 0; i < args.size(); ++i) call += (i ? ", KfAnyPtr{a[" : "KfAnyPtr{a[") + std::to_string(i) + "]}";
  std::ofstream(stem + ".cpp") << kEmulation << device_prelude() << k.source.substr(at) << "\nextern \"C\" void kf_launch(float** a, int block, long long grid) {\n"
                               << "  blockDim.x = unsigned(block);\n  gridDim.x = unsigned(grid);\n  std::barrier<> bar(block);\n  kf_barrier = &bar;\n"
                               << "  for (long long b = 0; b < grid; ++b) {  // one block after the other: their statics are reused\n"
                               << "    std::vector<std::thread> threads;\n"
                               << "    for (int i = 0; i < block; ++i) threads.emplace_back([a, i, b] { threadIdx.x = unsigned(i); blockIdx.x = unsigned(b); "
                               << call << "); });\n    for (auto& t : threads) t.join();\n  }\n}\n";
  // -Wno-stringop-overflow: gcc sizes kf_copy16_async's 16-byte copies into the shared tiles from index ranges it
  // cannot bound through the strided staging loops, and warns of writes the loops never make.
  const std::string cmd = "c++ -std=c++20 -O1 -shared -fPIC -pthread -Wno-unknown-pragmas -Wno-stringop-overflow -o " + stem + ".so " + stem + ".cpp";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("the host compiler failed on " + stem + ".cpp");
  void* lib = dlopen((stem + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw std::runtime_error(dlerror());
  auto launch = reinterpret_cast<void (*)(float**, int, long long)>(dlsym(lib, "kf_launch"));
  if (!launch) throw std::runtime_error(k.name + ": no launcher in " + stem + ".so");
  std::vector<float*> a = args;
  launch(a.data(), k.block, grid);
  dlclose(lib);
}

HostPlanBuffers plan_buffers_on_cpu(const Plan& p, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& params) {
  HostPlanBuffers h;
  h.data.resize(p.buffers.size());
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const PlanBuffer& pb = p.buffers[b];
    const std::vector<HostTensor>* given = pb.role == BufferRole::input ? &inputs : pb.role == BufferRole::param ? &params : nullptr;
    if (given && is_half(pb.dtype)) {  // two 16-bit patterns a float
      const std::vector<double>& v = given->at(size_t(pb.index)).data;
      h.data[b].assign((v.size() + 1) / 2, 0.f);
      auto* bits = reinterpret_cast<uint16_t*>(h.data[b].data());
      for (size_t i = 0; i < v.size(); ++i) bits[i] = half_bits(pb.dtype, v[i]);
    } else if (given && pb.dtype == DType::boolean) {  // a byte an element
      const std::vector<double>& v = given->at(size_t(pb.index)).data;
      h.data[b].assign((v.size() + 3) / 4, 0.f);
      auto* bytes = reinterpret_cast<bool*>(h.data[b].data());
      for (size_t i = 0; i < v.size(); ++i) bytes[i] = v[i] != 0;
    } else if (given) {
      h.data[b].assign(given->at(size_t(pb.index)).data.begin(), given->at(size_t(pb.index)).data.end());
    } else {  // 0x7fc0 is a NaN in f16 and bf16, 0x7fc07fc0 one in f32 (a float NaN's low half is a half zero)
      h.data[b].assign(size_t(std::max<int64_t>(1, numel(pb.shape))), std::bit_cast<float>(0x7fc07fc0u));
    }
    if (pb.role == BufferRole::output && pb.index == 0) h.output = int(b);
  }
  return h;
}

std::vector<float> run_plan_on_cpu(const Plan& p, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& params) {
  if (p.kernels.size() != 1) throw std::runtime_error("run_plan_on_cpu runs single-kernel plans, not " + std::to_string(p.kernels.size()));
  HostPlanBuffers h = plan_buffers_on_cpu(p, inputs, params);
  std::vector<float*> args;
  for (int b : p.kernels[0].args) args.push_back(h.data[size_t(b)].data());
  run_on_cpu(p.kernels[0], args);
  return output_values(p, h);
}

std::vector<float> output_values(const Plan& p, const HostPlanBuffers& h) {
  const PlanBuffer& out = p.buffers.at(size_t(h.output));
  if (!is_half(out.dtype)) return h.data.at(size_t(h.output));
  std::vector<float> values(size_t(numel(out.shape)));  // the 16-bit patterns' values
  const auto* bits = reinterpret_cast<const uint16_t*>(h.data.at(size_t(h.output)).data());
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(half_value(out.dtype, bits[i]));
  return values;
}

}  // namespace kforge::testing
