// Pointwise kernels: one expression per element of the output, grid-stride over chunks of
// block * vec * items elements. Each thread first loads `items` vectors of `vec` consecutive elements of
// every contiguous f32 operand (8- or 16-byte accesses, llm.c's Packed128), then computes and stores
// them: all loads are in flight before the first result is needed, so arithmetic-heavier ops (erf, tanh)
// still keep enough bytes moving to reach the memory's bandwidth.
#include "codegen/emitters.h"

namespace kforge {

std::vector<PlanKernel> emit_pointwise(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  int out = g.elem_outputs.at(0);
  int64_t n = numel(g.shape);
  bool f32_out = gr.at(out).type.dtype == DType::f32;
  int vec = f32_out ? ks.vec : 1, items = ks.items;
  std::string vt = vec == 4 ? "float4" : vec == 2 ? "float2" : "float";
  std::string B = std::to_string(ks.block), V = std::to_string(vec), I = std::to_string(items);
  std::vector<std::string> coords(g.shape.size());
  std::vector<int64_t> all;
  for (size_t d = 0; d < g.shape.size(); ++d) all.push_back(int64_t(d));

  // First pass: find which operands are read contiguously, then emit with those reads served from the
  // registers the load phase filled.
  std::string dec = decompose_index("idx", all, g.shape, coords, "        ");
  w.begin_site(coords, "idx", "        ");
  w.value(out);
  w.take();
  std::string decl, loads, views;
  for (int b : w.contiguous_reads()) {
    std::string v = "L" + std::to_string(b);
    decl += "    " + vt + " " + v + "v[" + I + "];\n";
    loads += "      if (base < n) " + v + "v[u] = *reinterpret_cast<const " + vt + "*>(b" + std::to_string(b) + " + base);\n";
    views += "      const float* " + v + " = reinterpret_cast<const float*>(&" + v + "v[u]);\n";
    w.set_vector_source(b, v + "[j]");
  }
  w.begin_site(coords, "idx", "        ");
  std::string val = w.value(out);
  std::string stmts = w.take();
  std::string oidx = w.out_index(out);

  std::string chunk = std::to_string(int64_t(ks.block) * vec * items);
  std::string base = "      const i64 base = chunk + ((i64)u * " + B + " + threadIdx.x) * " + V + ";\n";
  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "extern \"C\" __global__ void __launch_bounds__(" + B + ") " + name + "(" + w.params() + ") {\n";
  s += "  const i64 n = " + std::to_string(n) + "LL;\n";
  s += "  for (i64 chunk = (i64)blockIdx.x * " + chunk + "; chunk < n; chunk += (i64)gridDim.x * " + chunk + ") {\n";
  s += decl;
  s += "#pragma unroll\n    for (int u = 0; u < " + I + "; ++u) {  // load phase\n" + base + loads + "    }\n";
  s += "#pragma unroll\n    for (int u = 0; u < " + I + "; ++u) {  // compute and store phase\n" + base;
  s += "      if (base >= n) break;\n" + views;
  if (vec > 1) s += "      float O[" + V + "];\n";
  s += "#pragma unroll\n      for (int j = 0; j < " + V + "; ++j) {\n";
  s += "        const i64 idx = base + j;\n" + dec + stmts;
  if (vec > 1) s += "        O[j] = " + val + ";\n";
  else s += "        " + w.buf(out) + "[" + oidx + "] = " + val + ";\n";
  s += "      }\n";
  if (vec > 1) s += "      *reinterpret_cast<" + vt + "*>(" + w.buf(out) + " + base) = *reinterpret_cast<const " + vt + "*>(O);\n";
  s += "    }\n  }\n}\n";
  int64_t per_block = int64_t(ks.block) * vec * items;
  return {generated_kernel(g, ks, name, s, w.used_buffers(), full_grid((n + per_block - 1) / per_block), ks.block)};
}

}  // namespace kforge
