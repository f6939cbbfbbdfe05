// Pointwise kernels: one expression per element of the output, grid-stride over the flat index.
// With vec > 1 each thread moves `vec` consecutive elements through one 8- or 16-byte access for every
// contiguous f32 operand (llm.c's Packed128): fewer, wider memory instructions.
#include "codegen/emitters.h"

namespace kforge {

std::vector<PlanKernel> emit_pointwise(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  int out = g.elem_outputs.at(0);
  int64_t n = numel(g.shape);
  bool f32_out = gr.at(out).type.dtype == DType::f32;
  int vec = f32_out ? ks.vec : 1;
  std::string vt = vec == 4 ? "float4" : vec == 2 ? "float2" : "float";
  std::vector<std::string> coords(g.shape.size());
  std::vector<int64_t> all;
  for (size_t d = 0; d < g.shape.size(); ++d) all.push_back(int64_t(d));

  // First pass: find which operands are contiguous, then emit with vector sources bound to them.
  std::string dec = decompose_index("idx", all, g.shape, coords, "      ");
  w.begin_site(coords, "idx", "      ");
  w.value(out);
  w.take();
  std::string preload;
  if (vec > 1) {
    for (int b : w.contiguous_reads()) {
      std::string v = "L" + std::to_string(b);
      preload += "    const " + vt + " " + v + "v = *reinterpret_cast<const " + vt + "*>(b" + std::to_string(b) + " + base);\n";
      preload += "    const float* " + v + " = reinterpret_cast<const float*>(&" + v + "v);\n";
      w.set_vector_source(b, v + "[j]");
    }
  }
  w.begin_site(coords, "idx", "      ");
  std::string val = w.value(out);
  std::string stmts = w.take();
  std::string oidx = w.out_index(out);

  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ks.block) + ") " + name + "(" + w.params() + ") {\n";
  s += "  const i64 n = " + std::to_string(n) + "LL;\n";
  s += "  for (i64 base = ((i64)blockIdx.x * " + std::to_string(ks.block) + " + threadIdx.x) * " + std::to_string(vec) +
       "; base < n; base += (i64)gridDim.x * " + std::to_string(ks.block * vec) + ") {\n";
  s += preload;
  if (vec > 1) s += "    float O[" + std::to_string(vec) + "];\n";
  s += "#pragma unroll\n    for (int j = 0; j < " + std::to_string(vec) + "; ++j) {\n";
  s += "      const i64 idx = base + j;\n" + dec + stmts;
  if (vec > 1) s += "      O[j] = " + val + ";\n";
  else s += "      " + w.buf(out) + "[" + oidx + "] = " + val + ";\n";
  s += "    }\n";
  if (vec > 1) s += "    *reinterpret_cast<" + vt + "*>(" + w.buf(out) + " + base) = *reinterpret_cast<const " + vt + "*>(O);\n";
  s += "  }\n}\n";
  int64_t per_block = int64_t(ks.block) * vec * ks.items;
  return {make_kernel(g, ks, name, s, w, (n + per_block - 1) / per_block, ks.block)};
}

}  // namespace kforge
