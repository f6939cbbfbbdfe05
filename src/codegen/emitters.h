// Kernel templates, one file per family (emit_pointwise.cpp, emit_row.cpp, emit_scan.cpp,
// emit_pool.cpp, emit_recurrence.cpp, emit_attention.cpp), and the library steps (emit_matmul.cpp: cuBLASLt, or kforge's emit_matmul_mma.cpp; emit_conv.cpp:
// cuDNN, or kforge's emit_conv_direct.cpp for depthwise convolutions). Each turns one KernelGroup under one
// KernelSchedule into one or more PlanKernels.
#pragma once
#include <map>
#include <optional>
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
std::vector<PlanKernel> emit_recurrence(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
// Strategy tile of a recurrence (emit_recurrence_cluster.cpp): emit_recurrence's batch-split kernel.
std::vector<PlanKernel> emit_recurrence_cluster(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
std::vector<PlanKernel> emit_attention(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name);
// What the kernel writing a convolution's result applies on the way (codegen/conv_epilogue.h folded it into the
// node): the bias (a buffer of one value per channel, -1 for none) and the activation after it.
struct ConvEpilogue {
  int bias = -1;
  std::optional<Node> activation;
  bool empty() const { return bias < 0 && !activation; }
  // Statements writing fp32 expression `value` of channel `channel` through the epilogue to `lhs`, converted by
  // `to` (a function name, or empty); the kernel has the bias buffer as parameter `bias`.
  std::string store(const std::string& lhs, const std::string& value, const std::string& channel,
                    const std::string& to = "") const;
};
// The epilogue folded into conv node `conv`.
ConvEpilogue conv_epilogue(const EmitContext& cx, const Node& conv);
// emit_conv's own-kernel branch (strategy tile, a 2-D depthwise convolution): buffers x, w, y.
PlanKernel emit_conv_direct(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, int x, int w, int y,
                            const ConvEpilogue& epilogue = {});
// emit_matmul's own-kernel branch (strategy mma): the operands as emit_matmul describes them to cuBLASLt
// (transposed, ld, batch_stride), and the kernel's buffers [a, b, c, bias if the epilogue has one].
std::vector<PlanKernel> emit_matmul_mma(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                        const std::string& name, const MatmulDims& d, const nlohmann::json& a,
                                        const nlohmann::json& b, Epilogue e, std::vector<int> args);
// emit_matmul's cuBLASLt step in precision fp16 or fp16x3 (emit_matmul_split.cpp): the kernels making its 16-bit
// operand copies, then `step` rewritten to read them (args [a, b, c, bias?, workspace] on entry).
std::vector<PlanKernel> emit_matmul_split(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, PlanKernel step,
                                          const MatmulDims& d, int64_t batch);

// The fp16 copies' scales (emit_matmul_split.cpp), shared by fp16x3 products and convolutions: a kernel
// `<name>_absmax` writing each of two operands' largest finite magnitude as per-block partials into `partial`
// (blocks_a of a's, then blocks_b of b's; at most max_partials each), and the statements with which a 256-thread
// block of a later kernel folds them (reading `partial`) into `ea` and `eb`: the powers of two putting each
// operand's largest magnitude in [2^14, 2^15).
struct HalfScales {
  PlanKernel absmax;
  int partial = -1;
  int64_t blocks_a = 0, blocks_b = 0;
};
HalfScales emit_half_absmax(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name,
                            int a, int64_t na, int b, int64_t nb, int64_t max_partials);
std::string half_scales_code(const HalfScales& h);
// Statements splitting float `x` (already scaled) into `hi` = fp16(x) and, with `lo`, lo = fp16(x - hi) (0 where
// hi is infinite), as unsigned short locals.
std::string half_parts_code(const std::string& x, bool lo, const std::string& indent);
// The body of a [A][B][C] -> [a][c][b] transpose for a 256-thread block (emit_conv.cpp): 32 x 32 tiles through
// shared memory, so that both the read (along c) and the writes (along b) are coalesced, grid-stride over the
// tiles. Source element `v` is read from `src` at [a][b][c]; `load` is the float the tile keeps of it (an
// expression of v); `store` the statements writing tile value `x` of element (a, b, c) (locals of those names).
// tiled_transpose_blocks: the tiles, one block's work each. With C = 1 there is nothing to transpose (a
// channels-last tensor into its copies): an element a thread in order, grid-stride, c = 0, 256 elements a block.
// `fetch`, where given, replaces the read of `src`: statements defining `v` from the element's (a, b, c).
std::string tiled_transpose(int64_t A, int64_t B, int64_t C, const std::string& load, const std::string& store,
                            const std::string& fetch = "");
int64_t tiled_transpose_blocks(int64_t A, int64_t B, int64_t C);
// emit_conv's cuDNN step in fp16x3 (emit_conv_split.cpp): src [A][B][C] (float) to dst, channels last, each element
// scaled by 2^e (`which` operand's scale, ea or eb) and written as three fp16 parts (`parts`: "hi" or "lo" each)
// tripling B (groups of `group` along it: b = q group + j goes to q (3 group) + p group + j, [A][C][3B]) or, with
// `along_a`, tripling A the same way ([3A][C][B]). With `scale` >= 0 it also writes 2^-(ea + eb) there (the factor
// that undoes both scales).
PlanKernel emit_split_transpose(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, int src, int dst,
                                const HalfScales& h, const std::string& which, int64_t A, int64_t B, int64_t C, int64_t group,
                                bool along_a, const std::vector<std::string>& parts, int scale = -1);

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
int64_t clamp_grid(const KernelGroup& g, int64_t blocks);
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;  // CUDA's limit on gridDim.x
// A block per chunk of work, however many (up to gridDim.x's limit; the kernels' grid-stride loops cover the
// rest), for the flat kernels where clamping costs bandwidth (emit_common.cpp).
int64_t full_grid(int64_t blocks);

}  // namespace kforge
