// Scan kernels (cumsum, cumprod, cummax, cummin, logcumsumexp; forward or reverse) along one dim of S, with the
// elementwise prologue (a mask multiply) and epilogue (exclusive = inclusive - x) fused in. Every kind is one
// associative step, kf_scan_step(earlier, later), a lambda at the kernel's top.
//   thread: one thread walks one line sequentially; coalesced when the scanned dim is not innermost.
//   block:  one block walks one line in chunks of block*items; each thread scans `items` consecutive
//           elements in registers, a warp-shuffle scan combines the thread totals, and a carry crosses
//           chunks.
#include "codegen/emitters.h"
#include "ir/error.h"

namespace kforge {

namespace {
// The scan's step and its identity, in the interpreter's semantics (ir/interpreter.cpp, scan_step): cummax and
// cummin keep a NaN once met, as PyTorch's do; logcumsumexp adds in log space from -inf.
std::string scan_step(const std::string& kind, std::string& identity) {
  std::string body;
  if (kind == "sum") identity = "0.f", body = "return a + b;";
  else if (kind == "prod") identity = "1.f", body = "return a * b;";
  else if (kind == "max") identity = "-KF_INF", body = "return a != a || (b == b && a > b) ? a : b;";
  else if (kind == "min") identity = "KF_INF", body = "return a != a || (b == b && a < b) ? a : b;";
  else if (kind == "logsumexp")
    identity = "-KF_INF",
    body = "if (a != a || b != b) return a + b;\n    const float m = fmaxf(a, b);\n"
           "    return m == -KF_INF ? m : m + log1pf(expf(-fabsf(a - b)));";
  else
    throw UserError("scan kind '" + kind + "' has no kernel");
  return "  const auto kf_scan_step = [](float a, float b) -> float {\n    " + body + "\n  };\n";
}

std::string line_coords(const KernelGroup& g, int64_t dim, std::vector<std::string>& c, const std::string& indent) {
  std::vector<int64_t> others;
  for (size_t d = 0; d < g.shape.size(); ++d)
    if (int64_t(d) != dim) others.push_back(int64_t(d));
  return decompose_index("line", others, g.shape, c, indent);
}
}  // namespace

std::vector<PlanKernel> emit_scan(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  const Node& scan = gr.at(g.anchor);
  int64_t dim = scan.attr_i("dim"), len = g.shape[dim], lines = numel(g.shape) / std::max<int64_t>(len, 1);
  const bool rev = scan.attr_b("reverse");
  std::string ident;
  const std::string step = scan_step(scan.attr_s("kind"), ident), L = std::to_string(len) + "LL";
  auto comb = [](const std::string& a, const std::string& b) { return "kf_scan_step(" + a + ", " + b + ")"; };
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  std::vector<std::string> c(g.shape.size());
  std::string pos = rev ? "(" + L + " - 1 - j)" : "j";
  std::string s = kernel_header(cx.partition, g, ks, name);
  std::string body;
  auto element_site = [&](const std::string& indent) {
    c[dim] = "cd";
    w.begin_site(c, "", indent);
  };
  auto write_outputs = [&](const std::string& acc, const std::string& indent) {
    w.bind(g.anchor, acc);
    std::string writes;
    for (int o : g.elem_outputs) {
      std::string v = w.value(o);
      writes += indent + w.buf(o) + "[" + w.out_index(o) + "] = " + v + ";\n";
    }
    std::string r = w.take() + writes;
    w.unbind(g.anchor);
    return r;
  };

  if (ks.strategy == Strategy::thread) {
    std::string dec = line_coords(g, dim, c, "    ");
    element_site("      ");
    std::string x = w.value(scan.args[0]);
    std::string load = w.take();
    body = step + "  for (i64 line = (i64)blockIdx.x * " + std::to_string(ks.block) + " + threadIdx.x; line < " +
           std::to_string(lines) + "LL; line += (i64)gridDim.x * " + std::to_string(ks.block) + ") {\n" + dec;
    body += "    float acc = " + ident + ";\n    for (i64 j = 0; j < " + L + "; ++j) {\n";
    body += "      const i64 cd = " + pos + ";\n" + load + "      acc = " + comb("acc", x) + ";\n";
    body += write_outputs("acc", "      ") + "    }\n  }\n";
    s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ks.block) + ") " + name + "(" + w.params() + ") {\n" + body + "}\n";
    return {make_kernel(g, ks, name, s, w, (lines + ks.block - 1) / ks.block, ks.block)};
  }

  // block strategy
  int items = ks.items, B = ks.block;
  std::string I = std::to_string(items), CH = std::to_string(int64_t(B) * items);
  std::string dec = line_coords(g, dim, c, "    ");
  element_site("        ");
  std::string x = w.value(scan.args[0]);
  std::string load = w.take();
  body = step + "  __shared__ float kf_warp_totals[32];\n";
  body += "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  body += "  for (i64 line = blockIdx.x; line < " + std::to_string(lines) + "LL; line += gridDim.x) {\n" + dec;
  body += "    float carry = " + ident + ";\n";
  body += "    for (i64 chunk = 0; chunk < " + L + "; chunk += " + CH + ") {\n";
  body += "      float v[" + I + "];\n      const i64 first = chunk + (i64)threadIdx.x * " + I + ";\n";
  body += "#pragma unroll\n      for (int t = 0; t < " + I + "; ++t) {\n        const i64 j = first + t;\n";
  body += "        v[t] = " + ident + ";\n        if (j < " + L + ") {\n          const i64 cd = " + pos + ";\n" + load;
  body += "          v[t] = " + x + ";\n        }\n        if (t > 0) v[t] = " + comb("v[t - 1]", "v[t]") + ";\n      }\n";
  // Inclusive scan of thread totals within the warp, then across warps.
  body += "      float total = v[" + std::to_string(items - 1) + "];\n";
  body += "#pragma unroll\n      for (int o = 1; o < 32; o <<= 1) {\n";
  body += "        float y = __shfl_up_sync(0xffffffffu, total, o);\n        if (lane >= o) total = " + comb("y", "total") + ";\n      }\n";
  body += "      __syncthreads();\n      if (lane == 31) kf_warp_totals[warp] = total;\n      __syncthreads();\n";
  body += "      float before = carry;\n      for (int q = 0; q < warp; ++q) before = " + comb("before", "kf_warp_totals[q]") + ";\n";
  body += "      float up = __shfl_up_sync(0xffffffffu, total, 1);\n      if (lane > 0) before = " + comb("before", "up") + ";\n";
  body += "      float chunk_total = carry;\n      for (int q = 0; q < " + std::to_string(B / 32) + "; ++q) chunk_total = " + comb("chunk_total", "kf_warp_totals[q]") + ";\n";
  body += "#pragma unroll\n      for (int t = 0; t < " + I + "; ++t) {\n        const i64 j = first + t;\n";
  body += "        if (j < " + L + ") {\n          const i64 cd = " + pos + ";\n          const float acc = " + comb("before", "v[t]") + ";\n";
  element_site("          ");
  body += write_outputs("acc", "          ") + "        }\n      }\n      carry = chunk_total;\n    }\n  }\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(B) + ") " + name + "(" + w.params() + ") {\n" + body + "}\n";
  return {make_kernel(g, ks, name, s, w, lines, B)};
}

}  // namespace kforge
