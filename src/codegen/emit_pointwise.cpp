// Pointwise kernels: one expression per element of the output, grid-stride over chunks of
// block * vec * items elements. Each thread first loads `items` vectors of `vec` consecutive elements of
// every contiguous f32 operand (8- or 16-byte accesses, llm.c's Packed128), then computes and stores
// them: all loads are in flight before the first result is needed, so arithmetic-heavier ops (erf, tanh)
// still keep enough bytes moving to reach the memory's bandwidth. Half-precision operands and outputs are
// moved the same way, `vec` 16-bit patterns at a time (4- or 8-byte accesses).
#include <algorithm>
#include <optional>

#include "codegen/emitters.h"

namespace kforge {

namespace {
// The type of one access of `bytes` bytes: a float vector for f32 (float2, float4), unsigned integers for bits.
std::string access_type(int bytes, bool f32) {
  if (f32) return bytes == 16 ? "float4" : bytes == 8 ? "float2" : "float";
  return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : bytes == 4 ? "unsigned int" : "unsigned short";
}

// A materialized permute (codegen/partition.h) that moves a block of dims past the next, [A][B][C] -> [A][C][B]
// (channels last and back): tiled_transpose, both sides coalesced, where a pointwise kernel would read one side
// strided (an fp16 convolution's channels-last result back to channels first: 0.39 ms for 205 MB on an H100 read
// strided). 16-bit values cross the tile as floats, exactly. nullopt for any other permutation or dtype.
std::optional<PlanKernel> tiled_permute(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  const Node& p = gr.at(g.elem_outputs.at(0));
  const auto split = materialized_permute(p) ? block_transpose(p.attr_ints("dims")) : std::nullopt;
  if (!split || !is_float(p.type.dtype)) return std::nullopt;  // values cross the tile as floats: i64 would not
  const int src = p.args[0];
  const Shape& from = gr.at(src).type.shape;
  const size_t r = from.size(), k = split->k, j = split->j;
  auto product = [&](size_t a, size_t b) {
    int64_t v = 1;
    for (size_t i = a; i < b; ++i) v *= from[i];
    return v;
  };
  const int64_t A = product(0, k), B = product(k, j), C = product(j, r);
  const auto I = i64_literal;
  const DType dtype = p.type.dtype;
  const bool half = is_half(dtype);
  const std::string suffix = dtype == DType::bf16 ? "bf16" : "f16";
  const std::string load = half ? "kf_from_" + suffix + "(v)" : "v", store = half ? "kf_to_" + suffix + "(x)" : "x";
  std::string s = "// kforge kernel " + name + ": the permute '" + p.name + "' as a tiled transpose, [" + std::to_string(A) +
                  "][" + std::to_string(B) + "][" + std::to_string(C) + "] -> [a][c][b]\n";
  const bool readable = is_readable(cx.partition, src);
  const Access in = readable ? access_of(cx.partition, src) : Access{};
  if (g.elem_outputs.size() == 1 && readable && in.contiguous()) {
    const std::string type = half ? "unsigned short" : "float";
    s += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(const " + type + "* __restrict__ src, " + type +
         "* __restrict__ dst) {\n";
    s += tiled_transpose(A, B, C, load, "        dst[a * " + I(B * C) + " + c * " + I(B) + " + b] = " + store + ";\n") + "}\n";
    return generated_kernel(g, ks, name, s, {buffer_of(cx, in.owner), buffer_of(cx, g.elem_outputs[0])},
                            clamp_grid(g, tiled_transpose_blocks(A, B, C)), 256);
  }
  // The transposed value computed where it is read (elementwise arithmetic only the permute reads: partition.cpp),
  // at the source's coordinates (a, b, c split into its dims); the group's other outputs, values of the result's
  // shape computed from it (a rounding to fp16 beside it), at the result's coordinates, from the tile.
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  auto coords_of = [&](const Shape& shape, const std::vector<std::pair<std::string, std::pair<size_t, size_t>>>& parts,
                       std::vector<std::string>& coords) {
    std::string d;
    for (const auto& [index, range] : parts) {
      std::vector<int64_t> dims;
      for (size_t i = range.first; i < range.second; ++i) dims.push_back(int64_t(i));
      if (!dims.empty()) d += decompose_index(index, dims, shape, coords, "        ");
    }
    return d;
  };
  std::vector<std::string> source(r, "0");
  std::string fetch = coords_of(from, {{"a", {0, k}}, {"b", {k, j}}, {"c", {j, r}}}, source);
  w.begin_site(source, "", "        ");
  const std::string v = w.value(src);
  fetch += w.take() + "        const auto v = " + v + ";\n";
  std::vector<std::string> result(r, "0");
  const size_t moved = r - j;  // C's dims come first in the result
  std::string put = g.elem_outputs.size() > 1 ? coords_of(p.type.shape, {{"a", {0, k}}, {"c", {k, k + moved}}, {"b", {k + moved, r}}}, result) : "";
  put += "        const i64 didx = a * " + I(B * C) + " + c * " + I(B) + " + b;\n";
  put += "        const " + w.ctype(g.elem_outputs[0]) + " xp = " + store + ";\n";
  w.begin_site(result, "didx", "        ");
  w.bind(g.elem_outputs[0], "xp");
  std::vector<std::string> vals{"xp"}, at;
  for (size_t o = 1; o < g.elem_outputs.size(); ++o) vals.push_back(w.value(g.elem_outputs[o]));
  put += w.take();
  for (int o : g.elem_outputs) at.push_back(w.out_index(o));
  for (size_t o = 0; o < vals.size(); ++o) put += "        " + w.buf(g.elem_outputs[o]) + "[" + at[o] + "] = " + vals[o] + ";\n";
  s += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(" + w.params() + ") {\n";
  s += tiled_transpose(A, B, C, load, put, fetch) + "}\n";
  return generated_kernel(g, ks, name, s, w.used_buffers(), clamp_grid(g, tiled_transpose_blocks(A, B, C)), 256);
}
}  // namespace

std::vector<PlanKernel> emit_pointwise(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  if (auto transpose = tiled_permute(cx, g, ks, name)) return {*transpose};
  const Graph& gr = *cx.partition.graph;
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  const std::vector<int>& outs = g.elem_outputs;  // one, or values of the same shape computed together (partition.cpp)
  int64_t n = numel(g.shape);
  int vec = std::all_of(outs.begin(), outs.end(), [&](int o) { return is_float(gr.at(o).type.dtype); }) ? ks.vec : 1;
  int items = ks.items;
  std::string B = std::to_string(ks.block), V = std::to_string(vec), I = std::to_string(items);
  std::vector<std::string> coords(g.shape.size());
  std::vector<int64_t> all;
  for (size_t d = 0; d < g.shape.size(); ++d) all.push_back(int64_t(d));

  // First pass: find which operands are read contiguously, then emit with those reads served from the
  // registers the load phase filled.
  std::string dec = decompose_index("idx", all, g.shape, coords, "        ");
  w.begin_site(coords, "idx", "        ");
  for (int out : outs) w.value(out);
  w.take();
  std::string decl, loads, views;
  auto vector_loads = [&](const std::set<int>& buffers, bool f32) {
    const std::string et = f32 ? "float" : "unsigned short", at = access_type(vec * (f32 ? 4 : 2), f32);
    for (int b : buffers) {
      std::string v = "L" + std::to_string(b);
      decl += "    " + at + " " + v + "v[" + I + "];\n";
      loads += "      if (base < n) " + v + "v[u] = *reinterpret_cast<const " + at + "*>(b" + std::to_string(b) + " + base);\n";
      views += "      const " + et + "* " + v + " = reinterpret_cast<const " + et + "*>(&" + v + "v[u]);\n";
      w.set_vector_source(b, v + "[j]");
    }
  };
  vector_loads(w.contiguous_reads(), true);
  vector_loads(w.contiguous_half_reads(), false);
  w.begin_site(coords, "idx", "        ");
  std::vector<std::string> vals;
  for (int out : outs) vals.push_back(w.value(out));
  std::string stmts = w.take();
  std::vector<std::string> oidx;  // before params(): out_index marks each output's buffer written
  for (int out : outs) oidx.push_back(w.out_index(out));

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
  // Output k's vector O<k>, stored whole after the element loop (vec > 1), or each element where it lies.
  auto element_type = [&](int o) { return std::string(gr.at(o).type.dtype == DType::f32 ? "float" : "unsigned short"); };
  if (vec > 1)
    for (size_t k = 0; k < outs.size(); ++k) s += "      " + element_type(outs[k]) + " O" + std::to_string(k) + "[" + V + "];\n";
  s += "#pragma unroll\n      for (int j = 0; j < " + V + "; ++j) {\n";
  s += "        const i64 idx = base + j;\n" + dec + stmts;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (vec > 1) s += "        O" + std::to_string(k) + "[j] = " + vals[k] + ";\n";
    else s += "        " + w.buf(outs[k]) + "[" + oidx[k] + "] = " + vals[k] + ";\n";
  }
  s += "      }\n";
  if (vec > 1)
    for (size_t k = 0; k < outs.size(); ++k) {
      const DType d = gr.at(outs[k]).type.dtype;
      const std::string vt = access_type(vec * int(dtype_size(d)), d == DType::f32), O = "O" + std::to_string(k);
      s += "      *reinterpret_cast<" + vt + "*>(" + w.buf(outs[k]) + " + base) = *reinterpret_cast<const " + vt + "*>(" + O + ");\n";
    }
  s += "    }\n  }\n}\n";
  int64_t per_block = int64_t(ks.block) * vec * items;
  return {generated_kernel(g, ks, name, s, w.used_buffers(), full_grid((n + per_block - 1) / per_block), ks.block)};
}

}  // namespace kforge
