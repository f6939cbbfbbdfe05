// The split strategy of row kernels: a row's reduction in chunks over many blocks, partial results in a
// temporary buffer, then a second kernel folds them (emit_row_parts.h has the shared pieces).
#include "codegen/emit_row_parts.h"

namespace kforge::row_parts {

namespace {

// Per-statistic partial results of the split strategy, one Op::T per (row, chunk). Double accumulators
// get 8-byte slots: the IR has no f64, so the temp buffer is typed i64 (only its size matters) and the
// kernels declare it as Op::T.
struct Partials {
  int value = -1, index = -1;  // buffer indices; index only for argmax/argmin
  std::string ctype;
};


}  // namespace

std::vector<PlanKernel> emit_split(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                   const std::string& name, const RowShape& rs) {
  const Graph& gr = *cx.partition.graph;
  KF_ASSERT(!has_online_stat(g), "emit_split on a group with an online softmax statistic (check_schedule refuses it)");
  // Chunks of whole vectors where the walk reads `vec` neighbouring elements a step (rows of whole vectors: legality).
  const int64_t C = ks.chunks, V = ks.vec, L = ((rs.R + C - 1) / C + V - 1) / V * V;
  std::map<int, Partials> part;
  for (int s : g.stats) {
    std::string kind = gr.at(s).attr_s("kind"), tag = g.stats.size() > 1 ? "." + gr.at(s).name : "";
    // 8-byte slots for double accumulators, two for the variance's moments.
    int64_t slots = kind == "var" ? 2 : (kind == "sum" || kind == "prod") ? 1 : 0;
    Partials& pt = part[s];
    pt.ctype = is_arg(kind) ? "float" : op_struct(kind) + "::T";
    pt.value = add_temp(cx, g.key + tag + ".partials", slots ? DType::i64 : DType::f32,
                        {rs.K * C * std::max<int64_t>(slots, 1)});
    if (is_arg(kind)) pt.index = add_temp(cx, g.key + tag + ".partial_index", DType::i64, {rs.K * C});
  }
  auto B = [](int b) { return "b" + std::to_string(b); };

  // Stage 1: block (k, chunk) reduces its slice of row k, all statistics in one walk.
  KernelWriter w1(cx.partition, g, cx.buffer_of_owner);
  const std::string step = std::to_string(ks.block);
  std::string loop = unrolled(ks) + "for (i64 r = chunk * " + std::to_string(L) + "LL + threadIdx.x; r < min((chunk + 1) * " +
                     std::to_string(L) + "LL, " + std::to_string(rs.R) + "LL); r += " + step + ")";
  VecWalk vw;
  if (V > 1) {  // one 8- or 16-byte load of each row buffer a step (f32 or 16-bit patterns), vector kf_rv of the row
    vw.V = int(V);
    vw.vector_at = [&](int b) { return vector_read(vw.V, "b" + std::to_string(b) + " + kf_lin"); };
    loop = unrolled(ks) + "for (i64 kf_rv = chunk * " + std::to_string(L / V) + "LL + threadIdx.x; kf_rv < min((chunk + 1) * " +
           std::to_string(L / V) + "LL, " + std::to_string(rs.R / V) + "LL); kf_rv += " + step + ")";
  }
  std::string pass = stat_pass(w1, gr, g, rs, g.stats, loop, "  ", "", vw);
  std::string store;
  for (int s : g.stats) {
    const Partials& pt = part[s];
    std::string kind = gr.at(s).attr_s("kind"), acc = "acc" + std::to_string(s);
    w1.declare_buffer(pt.value, pt.ctype, true);
    if (is_arg(kind)) {
      w1.declare_buffer(pt.index, "i64", true);
      store += "  " + acc + " = kf_block_arg_reduce<" + is_max(kind) + ">(" + acc + ", kf_ascratch);\n";
      store += "  if (threadIdx.x == 0) { " + B(pt.value) + "[bid] = " + acc + ".v; " + B(pt.index) + "[bid] = " + acc + ".i; }\n";
    } else {
      store += "  " + acc + " = kf_block_reduce<" + op_struct(kind) + ">(" + acc + ", kf_scratch);\n";
      store += "  if (threadIdx.x == 0) " + B(pt.value) + "[bid] = " + acc + ";\n";
    }
  }
  std::string n1 = name + "_partial";
  std::string k1 = kernel_header(cx.partition, g, ks, n1);
  k1 += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ks.block) + ") " + n1 + "(" + w1.params() + ") {\n";
  k1 += "  __shared__ double kf_scratch[64];\n  __shared__ KfArg kf_ascratch[32];\n";
  // Grid-stride over (row, chunk) pairs: the grid is clamped (clamp_grid), the pairs are not.
  k1 += "  for (i64 bid = blockIdx.x; bid < " + std::to_string(rs.K * C) + "LL; bid += gridDim.x) {\n";
  k1 += "  const i64 k = bid / " + std::to_string(C) + ", chunk = bid % " + std::to_string(C) + ";\n";
  k1 += pass + store + "  }\n}\n";
  std::vector<PlanKernel> out = {make_kernel(g, ks, n1, k1, w1, rs.K * C, ks.block)};

  // Stage 2: one thread per row combines the partials and writes the row outputs.
  KernelWriter w2(cx.partition, g, cx.buffer_of_owner);
  std::string comb, base = "k * " + std::to_string(C) + "LL + j", J = "    for (int j = 0; j < " + std::to_string(C) + "; ++j) ";
  for (int s : g.stats) {
    const Partials& pt = part[s];
    std::string kind = gr.at(s).attr_s("kind"), acc = "acc" + std::to_string(s), sv = "s" + std::to_string(s);
    w2.declare_buffer(pt.value, pt.ctype, false);
    if (is_arg(kind)) {
      w2.declare_buffer(pt.index, "i64", false);
      comb += "    KfArg " + acc + " = {0.f, -1};\n" + J + acc + " = kf_arg_combine<" + is_max(kind) + ">(" + acc +
              ", KfArg{" + B(pt.value) + "[" + base + "], " + B(pt.index) + "[" + base + "]});\n";
      comb += "    const i64 " + sv + " = " + acc + ".i;\n";
    } else {
      std::string op = op_struct(kind);
      comb += "    " + op + "::T " + acc + " = " + op + "::init();\n" + J + acc + " = " + op + "::f(" + acc + ", " +
              B(pt.value) + "[" + base + "]);\n";
      comb += "    const float " + sv + " = " + op + "::finish(" + acc + ", " + std::to_string(rs.R) + ".0);\n";
    }
    w2.bind(s, sv);
  }
  std::string rows = row_outputs(w2, g, rs, "true", "    ");
  std::string n2 = name + "_finish";
  std::string k2 = kernel_header(cx.partition, g, ks, n2);
  k2 += "extern \"C\" __global__ void __launch_bounds__(128) " + n2 + "(" + w2.params() + ") {\n";
  k2 += "  for (i64 k = (i64)blockIdx.x * 128 + threadIdx.x; k < " + std::to_string(rs.K) + "LL; k += (i64)gridDim.x * 128) {\n";
  k2 += comb + rows + "  }\n}\n";
  out.push_back(make_kernel(g, ks, n2, k2, w2, (rs.K + 127) / 128, 128));
  return out;
}

}  // namespace kforge::row_parts
