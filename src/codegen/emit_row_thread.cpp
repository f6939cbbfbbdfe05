// The thread strategy of row kernels with vec > 1: a thread owns neighbouring rows and reads them with vector
// loads, of floats or of 16-bit patterns (emit_row_parts.h has the shared pieces).
#include "codegen/emit_row_parts.h"

namespace kforge::row_parts {

// Thread strategy with vec > 1: a thread owns `vec` neighbouring rows. The innermost dim is kept, so rows
// k0 .. k0 + vec - 1 lie side by side in memory and one 8- or 16-byte load per step of r serves all of them;
// each keeps its own accumulator. Fewer, wider threads: 23_argmin_middle_dim's 327680 columns of 3001 made
// 1.2 waves of one-column threads (1.135 ms against torch.compile's 1.022), a tail where a fifth of the GPU's
// threads ran alone; two columns a thread in 64-thread blocks: 0.900 ms (103% of the copy bandwidth; four in
// 128-thread blocks, 1.051).
std::vector<PlanKernel> emit_thread_vec(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                        const std::string& name, RowShape rs) {
  const Graph& gr = *cx.partition.graph;
  rs.linear_everywhere = true;
  const int V = ks.vec;
  const std::string vt = vector_type(V), in = "        ";
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  // A dry run finds the buffers read at the element itself: those are read as vectors at row k0's element.
  Coords first = coords_at(g, rs, true, in);
  w.begin_site(first.c, first.linear, in);
  for (int s : g.stats) w.value(stat_operand(gr, g, s));
  w.take();
  const std::vector<int> vectors(w.contiguous_reads().begin(), w.contiguous_reads().end());
  const std::vector<int> halves(w.contiguous_half_reads().begin(), w.contiguous_half_reads().end());
  std::string decls, step, finish;
  for (int b : vectors) step += "      " + vt + " kf_v" + std::to_string(b) + ";\n";
  for (int b : halves) step += "      " + half_vector_type(V) + " kf_h" + std::to_string(b) + ";\n";
  step += "      {\n" + in + "const i64 k = k0;\n" + first.stmts;
  for (int b : vectors)
    step += in + "kf_v" + std::to_string(b) + " = " + vector_read(V, "b" + std::to_string(b) + " + lin") + ";\n";
  for (int b : halves)
    step += in + "kf_h" + std::to_string(b) + " = " + half_vector_read(V, "b" + std::to_string(b) + " + lin") + ";\n";
  step += "      }\n";
  for (int j = 0; j < V; ++j) {
    const std::string J = std::to_string(j);
    for (int b : vectors) w.set_vector_source(b, "kf_v" + std::to_string(b) + kVectorLane[j]);
    for (int b : halves) w.set_vector_source(b, half_lane(V, "kf_h" + std::to_string(b), j));
    Coords c = coords_at(g, rs, true, in);
    w.begin_site(c.c, c.linear, in);
    std::string updates, fin;
    for (int s : g.stats) {
      StatAccumulator a = stat_accumulator(gr, g, rs, s, w.value(stat_operand(gr, g, s)), "_" + J, "    ", in);
      decls += a.decl, updates += a.step;
      fin += a.widen + finish_stat(gr, g, rs, s, "ACC", "ACC", "      ", "_" + J);
    }
    step += "      {\n" + in + "const i64 k = k0 + " + J + ";\n" + c.stmts + w.take() + updates + "      }\n";
    for (int s : g.stats) w.bind(s, "s" + std::to_string(s));
    finish += "    {\n      const i64 k = k0 + " + J + ";\n" + fin + row_outputs(w, g, rs, "true", "      ") + "    }\n";
  }
  w.clear_vector_sources();
  const std::string B = std::to_string(ks.block), KV = std::to_string(rs.K / V) + "LL";
  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "extern \"C\" __global__ void " + launch_bounds(ks, 0) + " " + name + "(" + w.params() + ") {\n";
  s += "  for (i64 kv = (i64)blockIdx.x * " + B + " + threadIdx.x; kv < " + KV + "; kv += (i64)gridDim.x * " + B + ") {\n";
  s += "    const i64 k0 = kv * " + std::to_string(V) + ";\n" + decls;
  s += "    " + unrolled(ks) + "for (i64 r = 0; r < " + std::to_string(rs.R) + "LL; ++r) {\n" + step + "    }\n" + finish + "  }\n}\n";
  return {make_kernel(g, ks, name, s, w, (rs.K / V + ks.block - 1) / ks.block, ks.block)};
}

}  // namespace kforge::row_parts
