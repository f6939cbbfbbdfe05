// Kernel templates, one file per family (emit_pointwise.cpp, emit_row.cpp, emit_scan.cpp,
// emit_pool.cpp), and the library steps (emit_matmul.cpp: cuBLASLt, or kforge's emit_matmul_mma.cpp; emit_conv.cpp:
// cuDNN, or kforge's emit_conv_direct.cpp for depthwise convolutions). Each turns one KernelGroup under one
// KernelSchedule into one or more PlanKernels.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "codegen/kernel_writer.h"
#include "codegen/plan.h"
#include "ir/matmul.h"

namespace kforge {

struct EmitContext {
  const Partition& partition;
  const std::map<int, int>& buffer_of_owner;  // stored node -> plan buffer id
  std::vector<PlanBuffer>& buffers;           // emitters may add temps (split partials)
};

std::vector<PlanKernel> emit_pointwise(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
std::vector<PlanKernel> emit_row(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
std::vector<PlanKernel> emit_scan(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
std::vector<PlanKernel> emit_pool(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
std::vector<PlanKernel> emit_matmul(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
std::vector<PlanKernel> emit_conv(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
// emit_conv's own-kernel branch (strategy tile, a 2-D depthwise convolution): buffers x, w, y.
PlanKernel emit_conv_direct(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, int x, int w, int y,
                            int bias = -1);
// emit_matmul's own-kernel branch (strategy mma): the operands as emit_matmul describes them to cuBLASLt
// (transposed, ld, batch_stride), and the kernel's buffers [a, b, c, bias if the epilogue has one].
std::vector<PlanKernel> emit_matmul_mma(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                        const std::string& name, const MatmulDims& d, const nlohmann::json& a,
                                        const nlohmann::json& b, Epilogue e, std::vector<int> args);
// emit_matmul's cuBLASLt step in precision fp16 or fp16x3 (emit_matmul_split.cpp): the kernels making its 16-bit
// operand copies, then `step` rewritten to read them (args [a, b, c, bias?, workspace] on entry).
std::vector<PlanKernel> emit_matmul_split(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, PlanKernel step,
                                          const MatmulDims& d, int64_t batch);

// Shared pieces of the templates.
// The plan buffer holding stored node `node`.
int buffer_of(const EmitContext& cx, int node);
// The plan's temp buffer `name` of `bytes` for a library's workspace, added on first use: library steps run
// one after the other on one stream, so the steps of one library share it.
int library_workspace(EmitContext& cx, const std::string& name, int64_t bytes);
// A new temp buffer of the plan; returns its id.
int add_temp(EmitContext& cx, const std::string& name, DType dtype, Shape shape);
// An integer as a 64-bit C literal ("42LL"), for sizes baked into kernel source.
std::string i64_literal(int64_t v);
// Statements `const i64 c<d> = (index / stride) % size;` for `dims` of `shape`, with stride the product
// of the later dims in `dims`; sets coords[d] = "c<d>".
std::string decompose_index(const std::string& index, const std::vector<int64_t>& dims, const Shape& shape,
                            std::vector<std::string>& coords, const std::string& indent);
// The comment every generated kernel opens with: group, members, shapes, schedule.
std::string kernel_header(const Partition& p, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
// The PlanKernel of a generated kernel: the device prelude + `body`, launched on `grid` blocks as given.
PlanKernel generated_kernel(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, const std::string& body,
                            std::vector<int> args, int64_t grid, int block);
// generated_kernel over the buffers `w` used, its grid clamped (clamp_grid).
PlanKernel make_kernel(const KernelGroup& g, const KernelSchedule& ks, const std::string& name,
                       const std::string& body, const KernelWriter& w, int64_t grid, int block);
int64_t clamp_grid(int64_t blocks);
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;  // CUDA's limit on gridDim.x
// A block per chunk of work, however many (up to gridDim.x's limit; the kernels' grid-stride loops cover the
// rest), for the flat kernels where clamping costs bandwidth (emit_common.cpp).
int64_t full_grid(int64_t blocks);

}  // namespace kforge
