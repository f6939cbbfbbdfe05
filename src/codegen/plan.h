// A plan: the kernels of one lowered graph under one schedule, in launch order, with their CUDA source,
// launch geometry and the buffers they use. It is what the runtime loads and what the database stores.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/schedule.h"
#include "ir/conv.h"
#include "ir/types.h"

namespace kforge {

enum class BufferRole { input, param, output, temp };

struct PlanBuffer {
  BufferRole role;
  int index = -1;  // position among the graph's inputs / params / outputs; -1 for temps
  std::string name;
  DType dtype;
  Shape shape;
  int64_t bytes() const { return nbytes({dtype, shape}); }
};

// How a plan step runs: a generated kernel compiled by NVRTC, or a library call described by
// PlanKernel::library (no source, no launch geometry).
enum class StepKind { nvrtc, cublaslt, cudnn };

// The largest thread block cluster CUDA calls portable; a function launched in larger ones (up to 16 on Hopper) opts
// in at load (LoadedPlan).
constexpr int kPortableCluster = 8;

struct PlanKernel {
  std::string name;    // entry point (extern "C"); a library step's name for logs
  std::string group;   // KernelGroup::key
  std::string source;  // complete CUDA source: prelude + kernel (empty for a library step)
  std::vector<int> args;  // buffer ids, in parameter order
  int64_t grid = 1;
  int block = 256;
  int smem = 0;  // dynamic shared memory bytes (row caches)
  nlohmann::json schedule;
  StepKind kind = StepKind::nvrtc;  // JSON "kind", absent in plans written before library steps: nvrtc
  // cublaslt / cudnn: the call's parameters (codegen/emit_matmul.cpp, emit_conv.cpp document them); args are
  // its buffers.
  nlohmann::json library;
  // The kernel's blocks loop over its work and gain from fewer of them (a bulk row cache prefetches each block's
  // next row): the launch takes at most as many blocks as the GPU holds at once (LoadedPlan), `grid` at most.
  bool persistent = false;
  // The kernel's blocks wait for each other (a grid barrier: emit_recurrence.cpp): launched cooperatively, so
  // that the driver refuses a grid that cannot be resident at once instead of the barrier waiting forever.
  bool cooperative = false;
  // Blocks of a thread block cluster (the kernel's __cluster_dims__): above 8, a size the hardware allows but
  // CUDA calls non-portable, which the function must opt in to when loaded (LoadedPlan).
  int cluster = 1;
};

struct Plan {
  std::vector<PlanBuffer> buffers;
  std::vector<PlanKernel> kernels;
  Schedule schedule;
  std::string graph_hash;
  // Bytes the graph must move at least: every input and param read once, every output written once.
  int64_t min_bytes() const;
  // Whether a step computes below fp32's accuracy: TF32, fp16 or bf16 (its own parameters say, whatever the
  // schedule claims).
  bool below_fp32() const;
  nlohmann::json to_json() const;
  static Plan from_json(const nlohmann::json& j);
};

// Throws a UserError naming the step and the operand when a library step's parameters do not fit its
// buffers (count, dtype, extent of every strided batch): the library would read or write past them.
// Also refuses a block whose op does not belong to the step's kind (cublaslt: matmul, cudnn: conv).
void check_library_step(const PlanKernel& k, const std::vector<PlanBuffer>& buffers);
// The checks of each op, beside the block's definition (codegen/emit_matmul.cpp, emit_conv.cpp).
void check_matmul_step(const PlanKernel& k, const std::vector<PlanBuffer>& buffers);
void check_conv_step(const PlanKernel& k, const std::vector<PlanBuffer>& buffers);
// A cudnn step's geometry, re-derived from its block by ir/conv's rules (UserError, prefixed by `where`).
ConvDims conv_step_dims(const nlohmann::json& library, const std::string& where);
// One operand a library step needs: its name, elements at least, and element type.
struct StepOperand {
  std::string name;
  int64_t elements = 0;
  DType dtype = DType::f32;
};
// That the step has one buffer per `need` entry, in order; UserError otherwise.
void check_step_buffers(const PlanKernel& k, const std::vector<PlanBuffer>& buffers, const std::vector<StepOperand>& need,
                        const std::string& where);

std::string to_string(BufferRole r);
std::string to_string(StepKind k);

}  // namespace kforge
