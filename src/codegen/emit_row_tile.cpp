// The tile strategy of row kernels: a warp's lanes own 32 rows, the warps of a block (or a cluster) walk them
// together (emit_row_parts.h has the shared pieces).
#include "codegen/emit_row_parts.h"

namespace kforge::row_parts {

namespace {

// The tile strategy's cross-warp combine of statistic `s`: each warp's partial for lane l's row goes to
// shared memory, then every thread folds the W partials of its row into s<s>. A tile split across a cluster of
// C blocks then folds the blocks' totals for the lane (kf_cluster_fold, in rank order: the same bits in every
// block), from two slots a lane that alternate (kf_cround) as the block strategy's do.
std::string tile_combine(const Graph& gr, const KernelGroup& g, const RowShape& rs, int s, const std::string& Ws, int C) {
  std::string kind = gr.at(s).attr_s("kind"), acc = "acc" + std::to_string(s), sv = "s" + std::to_string(s);
  std::string t = "t" + std::to_string(s);
  std::string out = "    __syncthreads();  // the previous statistic's partials have been read\n";
  const std::string Cs = std::to_string(C);
  if (is_arg(kind)) {
    const std::string combine = "kf_arg_combine<" + is_max(kind) + ">";
    out += "    kf_apart[warp][lane] = " + acc + ";\n    __syncthreads();\n";
    out += "    KfArg " + t + " = kf_apart[0][lane];\n";
    out += "    for (int q = 1; q < " + Ws + "; ++q) " + t + " = " + combine + "(" + t + ", kf_apart[q][lane]);\n";
    if (C > 1)
      out += "    " + t + " = kf_cluster_fold<KfArg, " + Cs + ">(" + t + ", &kf_capart[0][lane], kf_cround, [](KfArg a, KfArg b) { return " +
             combine + "(a, b); }, 32, 32);\n";
    return out + "    const i64 " + sv + " = " + t + ".i;\n";
  }
  std::string op = stat_op(gr, g, s);
  std::string part = "reinterpret_cast<" + op + "::T*>(kf_part)";  // slots sized for the largest Op::T
  out += "    " + part + "[warp * 32 + lane] = " + acc + ";\n    __syncthreads();\n";
  out += "    " + op + "::T " + t + " = " + part + "[lane];\n";
  out += "    for (int q = 1; q < " + Ws + "; ++q) " + t + " = " + op + "::f(" + t + ", " + part + "[q * 32 + lane]);\n";
  if (C > 1)
    out += "    " + t + " = kf_cluster_fold<" + op + "::T, " + Cs + ">(" + t + ", reinterpret_cast<" + op + "::T*>(kf_cpart) + lane, kf_cround, [](" +
           op + "::T a, " + op + "::T b) { return " + op + "::f(a, b); }, 32, 32);\n";
  return out + "    const float " + sv + " = " + op + "::finish(" + t + ", " + std::to_string(rs.R) + ".0);\n";
}

}  // namespace

// Tile strategy: lane l of every warp owns row k = tile * 32 + l; warp w walks r = w, w + W, ...; the
// warps' partial statistics meet in shared memory and every thread reads back the row's total.
std::vector<PlanKernel> emit_tile(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                  const std::string& name, RowShape rs) {
  const Graph& gr = *cx.partition.graph;
  const bool in_registers = ks.cache_row == RowCache::registers;
  rs.linear_everywhere = ks.cache_row != RowCache::none;
  int W = ks.block / 32;
  std::string Ws = std::to_string(W), K = std::to_string(rs.K) + "LL";
  std::string R = std::to_string(rs.R) + "LL";  // an inactive lane starts past the row's end
  // A tile split across a cluster of C blocks: block kf_crank's warps walk r = kf_crank * W + warp, stepping W * C.
  const int C = cluster_blocks(ks);
  const std::string first = C > 1 ? "kf_crank * " + Ws + " + " : "", step = std::to_string(row_walkers(ks));
  std::string loop = unrolled(ks) + "for (i64 r = active ? " + first + "warp : " + R + "; r < " + R + "; r += " + step + ")";
  const int64_t slots = register_row_slots(g, ks);
  if (in_registers)  // slot kf_j holds r = warp + kf_j * W: a fixed-length walk, fully unrolled, in registers
    loop = "_Pragma(\"unroll\") for (int kf_j = 0, kf_w = " + first + "(kf_tid() >> 5); kf_j < " + std::to_string(slots) +
           "; ++kf_j) if (const i64 r = kf_w + (i64)kf_j * " + step + "; active && r < " + R + ")";
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  std::string body;
  // Row cache: element r of lane l's row goes to kf_row[r * 32 + l] as the first pass reads it (or to the
  // thread's register slot). Every pass walks the same (r, lane) pairs in the same thread, so the later passes
  // read back their own writes and no barrier is needed; the 32 lanes of a warp touch 32 consecutive words (no
  // bank conflicts).
  std::vector<int> cached;
  if (ks.cache_row == RowCache::shared)
    cached = cacheable_buffers(w, gr, g, rs, loop, size_t(row_cache_limit(ks) / row_cache_bytes(g, ks, 1)));
  if (in_registers) cached = cacheable_buffers(w, gr, g, rs, loop, size_t(kMaxRegisterRow / slots));
  std::string fill = fill_row_cache(w, cached, [&](size_t i) {
    if (in_registers) return "kf_reg" + std::to_string(i) + "[kf_j]";
    return "kf_row[" + std::to_string(int64_t(i) * rs.R * 32) + "LL + r * 32 + lane]";
  });
  for (int pass = 0; pass < stat_walks(g); ++pass) {
    std::vector<int> stats = stats_in_pass(g, pass);
    if (pass == 0 && in_registers)
      body += "    const i64 kf_kc = active ? k : " + std::to_string(rs.K - 1) + "LL;\n" +
              register_fill_walk(g, rs, fill, slots, first + "(kf_tid() >> 5)", row_walkers(ks), "kf_kc");
    body += stat_pass(w, gr, g, rs, stats, loop, "    ", pass == 0 && !in_registers ? fill : "");
    for (int s : stats) {
      body += tile_combine(gr, g, rs, s, Ws, C);
      w.bind(s, "s" + std::to_string(s));
    }
  }
  if (!g.row_outputs.empty()) body += row_outputs(w, g, rs, C > 1 ? "active && warp == 0 && kf_crank == 0" : "active && warp == 0", "    ");
  body += elem_outputs_pass(w, g, rs, loop);
  w.clear_vector_sources();
  std::string s = kernel_header(cx.partition, g, ks, name);
  const int64_t smem = cached.empty() || in_registers ? 0 : row_cache_bytes(g, ks, int(cached.size()));
  const int64_t register_floats = in_registers ? slots * int64_t(cached.size()) : 0;
  s += "extern \"C\" __global__ void " + cluster_dims(C) + launch_bounds(ks, smem, register_floats) + " " + name + "(" + w.params() + ") {\n";
  s += "  __shared__ KfMoments kf_part[" + Ws + "][32];\n  __shared__ KfArg kf_apart[" + Ws + "][32];\n";
  if (C > 1)
    s += "  __shared__ KfMoments kf_cpart[2][32];  // two slots of the block's per-lane totals, read by the cluster\n"
         "  __shared__ KfArg kf_capart[2][32];\n  const unsigned kf_crank = kf_cluster_rank();\n  unsigned kf_cround = 0;\n";
  if (!cached.empty() && !in_registers)
    s += "  extern __shared__ float kf_row[];  // " + std::to_string(cached.size()) + " cached buffer(s) of 32 rows\n";
  for (size_t i = 0; in_registers && i < cached.size(); ++i)
    s += "  float kf_reg" + std::to_string(i) + "[" + std::to_string(slots) + "];  // this thread's elements of cached row buffer " +
         std::to_string(i) + "\n";
  s += "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  const std::string Cs = std::to_string(C);
  s += "  for (i64 tile = blockIdx.x" + (C > 1 ? " / " + Cs : "") + "; tile * 32 < " + K + "; tile += gridDim.x" + (C > 1 ? " / " + Cs : "") + ") {\n";
  s += "    const i64 k = tile * 32 + lane;\n    const bool active = k < " + K + ";\n" + body + "  }\n" +
       (C > 1 ? "  kf_cluster_sync();  // no block leaves while another still reads its shared memory\n" : "") + "}\n";
  PlanKernel k = make_kernel(g, ks, name, s, w, (rs.K + 31) / 32 * C, ks.block);
  k.smem = int(smem);
  return {k};
}

}  // namespace kforge::row_parts
