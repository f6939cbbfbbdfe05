// Row kernels: reductions over the axes of an iteration shape S, fused with the elementwise work that
// uses them. For each row (a point of the kept dims) the kernel makes one pass over the row per
// statistic, in order (softmax: max, then sum of exp), computes the row outputs, then one last pass
// writes the elementwise outputs. Rows are re-read from memory on each pass; L1/L2 serve most re-reads
// of short rows.
#include "codegen/emit_row_parts.h"

namespace kforge {

using namespace row_parts;

namespace {

// Bulk row cache (RowCache::bulk): each block owns rows k, k + gridDim.x, ... and two row buffers. While it
// works on row k in one, the copy engine fills the other with its next row (cp.async.bulk), so HBM keeps
// streaming through the block's reductions and writes, with no thread issuing a load. Buffer i of a row is at
// kf_cur[i * RP + r], kf_cur = the stage's slots + sh, sh = the row start's element offset past a 16-byte boundary:
// the middle of the row, 16-byte aligned at both ends, is copied; threads load the elements on either side. The
// cached buffers are all f32 rows or all half-precision ones (16-bit patterns, converted by the cast that reads
// them): a copy moves bytes, and one element size keeps every slot's alignment.
struct BulkRow {
  std::vector<int> cached;  // buffer ids, read at the element itself
  int64_t R = 0, RP = 0;    // row length; elements per buffer slot (a multiple of 8, 16 bytes either way)
  int esize = 4;            // bytes an element: 4 (floats) or 2 (half-precision patterns)
  std::string et() const { return esize == 4 ? "float" : "unsigned short"; }
  std::string slots() const { return esize == 4 ? "kf_row" : "reinterpret_cast<unsigned short*>(kf_row)"; }
  int64_t align() const { return 16 / esize; }  // elements between 16-byte boundaries
  std::string stride() const { return std::to_string(int64_t(cached.size()) * RP); }
  // The 16-byte-aligned middle [lo, hi) of row `row` (an i64 expression), as declarations sh, lo, hi + suffix.
  std::string bounds(const std::string& row, const std::string& sfx, const std::string& in) const {
    const std::string Rs = std::to_string(R) + "LL", m = std::to_string(align() - 1), A = std::to_string(align());
    return in + "const int sh" + sfx + " = (int)((" + row + ") * " + Rs + " & " + m + ");\n" +
           in + "const i64 lo" + sfx + " = (" + A + " - sh" + sfx + ") & " + m + ", hi" + sfx + " = " + Rs + " - ((sh" + sfx + " + " + Rs + ") & " + m + ");\n";
  }
  // Thread 0 starts the copies of row `row` into buffer stage `stage` (both expressions).
  std::string fetch(const std::string& row, const std::string& stage, const std::string& in) const {
    const std::string i2 = in + "  ", bar = "&kf_bar[" + stage + "]", E = std::to_string(esize);
    std::string s = in + "{\n" + bounds(row, "", i2) + i2 + et() + "* const dst = " + slots() + " + (" + stage + ") * " + stride() + " + sh + lo;\n";
    s += i2 + "kf_bulk_fence();\n" + i2 + "kf_bulk_expect(" + bar + ", (unsigned)(" + std::to_string(cached.size()) + " * (hi - lo) * " + E + "));\n";
    for (size_t i = 0; i < cached.size(); ++i)
      s += i2 + "kf_bulk_copy(dst + " + std::to_string(int64_t(i) * RP) + ", b" + std::to_string(cached[i]) + " + (" + row +
           ") * " + std::to_string(R) + "LL + lo, (unsigned)((hi - lo) * " + E + "), " + bar + ");\n";
    return s + in + "}\n";
  }
  // The head of row k's iteration kf_it: start the next row's copy, wait for this one's, load the edges.
  std::string row_start(const std::string& K) const {
    const std::string A = std::to_string(align());
    std::string s = "    const int kf_stage = (int)(kf_it & 1);\n";
    s += "    if (threadIdx.x == 0 && k + gridDim.x < " + K + ")\n" + fetch("k + gridDim.x", "kf_stage ^ 1", "    ");
    s += bounds("k", "", "    ");
    s += "    " + et() + "* const kf_cur = " + slots() + " + kf_stage * " + stride() + " + sh;\n";
    s += "    kf_bulk_wait(&kf_bar[kf_stage], (unsigned)(kf_it >> 1) & 1u);\n";
    s += "    if (threadIdx.x < " + std::to_string(2 * align()) + ") {  // the elements outside the copied middle: [0, lo) and [hi, R)\n";
    s += "      const i64 r = threadIdx.x < " + A + " ? (i64)threadIdx.x : hi + threadIdx.x - " + A + ";\n";
    s += "      if (threadIdx.x < " + A + " ? r < lo : r < " + std::to_string(R) + "LL) {\n";
    for (size_t i = 0; i < cached.size(); ++i)
      s += "        kf_cur[" + std::to_string(int64_t(i) * RP) + "LL + r] = b" + std::to_string(cached[i]) + "[k * " +
           std::to_string(R) + "LL + r];\n";
    return s + "      }\n    }\n    __syncthreads();\n";
  }
  // Before the row loop: the barriers, and the first row's copy.
  std::string prologue(const std::string& K) const {
    std::string s = "  __shared__ unsigned long long kf_bar[2];\n";
    s += "  if (threadIdx.x == 0) kf_bulk_init(&kf_bar[0]), kf_bulk_init(&kf_bar[1]);\n  __syncthreads();\n";
    return s + "  if (threadIdx.x == 0 && blockIdx.x < " + K + ")\n" + fetch("(i64)blockIdx.x", "0", "  ");
  }
};

}  // namespace

std::vector<PlanKernel> emit_row(EmitContext& cx, const KernelGroup& group, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  for (int s : group.stats)
    if (gr.at(s).type.dtype != DType::f32 && !is_arg(gr.at(s).attr_s("kind")))
      throw UserError("reduction '" + gr.at(s).name + "' over " + to_string(gr.at(gr.at(s).args[0]).type.dtype) +
                      " values: kforge generates float reductions only (accumulating integers in float would round)");
  // A cached row's extra walk reads the cache: no online statistics then (partition.h, without_online_stats).
  const KernelGroup g = ks.cache_row == RowCache::none ? group : without_online_stats(group);
  RowShape rs = row_shape_of(g);
  if (ks.strategy == Strategy::split) return emit_split(cx, g, ks, name, rs);
  if (ks.strategy == Strategy::tile) return emit_tile(cx, g, ks, name, rs);
  if (ks.strategy == Strategy::thread && ks.vec > 1) return emit_thread_vec(cx, g, ks, name, rs);
  Skeleton sk = skeleton(ks, rs);
  const bool in_registers = ks.cache_row == RowCache::registers, bulk = ks.cache_row == RowCache::bulk;
  const int64_t slots = register_row_slots(g, ks);
  // A cluster's blocks share each row: block kf_crank walks from kf_crank * block, all of them stepping together.
  const int C = cluster_blocks(ks);
  const std::string first = C > 1 ? "kf_crank * " + std::to_string(ks.block) + " + " : "", step = std::to_string(row_walkers(ks));
  if (in_registers)  // a walk of fixed length, fully unrolled: slot kf_j is then a register, not a stack index
    sk.elem_loop = "_Pragma(\"unroll\") for (int kf_j = 0, kf_t = " + first + "kf_tid(); kf_j < " + std::to_string(slots) +
                   "; ++kf_j) if (const i64 r = kf_t + (i64)kf_j * " + step + "; r < " + std::to_string(rs.R) + "LL)";
  VecWalk vw;
  if (ks.strategy == Strategy::block && ks.vec > 1) {
    vw.V = ks.vec;
    sk.elem_loop = unrolled(ks) + "for (i64 kf_rv = " + first + "threadIdx.x; kf_rv < " + std::to_string(rs.R / ks.vec) +
                   "LL; kf_rv += " + step + ")";
  }
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  std::string body;
  // Row cache: the row buffers the first pass reads are kept on chip as they are read (shared memory, or
  // each thread's registers) or copied there ahead (bulk); later passes read them there, so each row crosses
  // HBM once however many passes the group makes.
  std::vector<int> cached;
  int64_t smem = 0;
  std::string cache_base = ks.strategy == Strategy::warp ? "(threadIdx.x >> 5) * " : "0 * ";
  BulkRow br;
  br.R = rs.R, br.RP = bulk_row_floats(g);
  if (bulk) {
    // The f32 rows where there are any, else the half-precision ones; as many as fit, the rest re-read from memory.
    std::vector<int> f32, halves;
    for (int b : cacheable_buffers(w, gr, g, rs, sk.elem_loop, SIZE_MAX))
      (is_half(w.buffer_dtype(b)) ? halves : f32).push_back(b);
    cached = f32.empty() ? halves : f32;
    br.esize = f32.empty() ? 2 : 4;
    if (br.esize == 2) br.RP = (rs.R + 7 + 7) / 8 * 8;  // room for a start up to 7 past a boundary; slots stay aligned
    cached.resize(std::min(cached.size(), size_t(bulk_cache_limit(ks) / (2 * br.RP * br.esize))));
    smem = 2 * br.RP * br.esize * int64_t(cached.size());
    cache_base += std::to_string(int64_t(cached.size()) * rs.R) + "LL";
  } else if (ks.cache_row != RowCache::none) {
    // As many row buffers as fit; the rest are re-read from memory.
    size_t fit = in_registers ? size_t(kMaxRegisterRow / slots) : size_t(kMaxRowCache / row_cache_bytes(g, ks, 1));
    cached = cacheable_buffers(w, gr, g, rs, sk.elem_loop, fit);
    if (!in_registers) smem = row_cache_bytes(g, ks, int(cached.size()));
    cache_base += std::to_string(int64_t(cached.size()) * rs.R) + "LL";
  }
  br.cached = cached;
  // A vector walk reads a bulk-cached buffer's vector from its slot, the others' from memory.
  auto slot_or_memory = [&](int b, bool half) {
    auto at = std::find(cached.begin(), cached.end(), b);
    const std::string from = bulk && at != cached.end()
                                 ? "kf_cur + " + std::to_string(int64_t(at - cached.begin()) * br.RP) + "LL + kf_rv * " + std::to_string(vw.V)
                                 : "b" + std::to_string(b) + " + kf_lin";
    return half ? half_vector_read(vw.V, from) : vector_read(vw.V, from);
  };
  vw.vector_at = [&](int b) { return slot_or_memory(b, false); };
  vw.half_vector_at = [&](int b) { return slot_or_memory(b, true); };
  std::string fill = bulk ? "" : fill_row_cache(w, cached, [&](size_t i) {
    if (in_registers) return "kf_reg" + std::to_string(i) + "[kf_j]";
    return "kf_row[" + cache_base + " + " + std::to_string(int64_t(i) * rs.R) + "LL + r]";
  });
  for (size_t i = 0; bulk && i < cached.size(); ++i)
    w.set_vector_source(cached[i], "kf_cur[" + std::to_string(int64_t(i) * br.RP) + "LL + r]");
  const std::string K = std::to_string(rs.K) + "LL";
  if (bulk && !cached.empty()) body += br.row_start(K);
  for (int pass = 0; pass < stat_walks(g); ++pass) {
    std::vector<int> stats = stats_in_pass(g, pass);
    if (pass == 0 && in_registers) body += register_fill_walk(g, rs, fill, slots, first + "kf_tid()", row_walkers(ks));
    body += stat_pass(w, gr, g, rs, stats, sk.elem_loop, "    ", pass == 0 && !in_registers ? fill : "", vw);
    if (paired_block_reduce(gr, ks, stats)) body += finish_stat_pair(gr, g, rs, stats, "    ");
    else
      for (int s : stats) body += finish_stat(gr, g, rs, s, sk.reduce_f, sk.reduce_arg, "    ");
    if (pass == 0 && !cached.empty() && ks.strategy == Strategy::warp && !in_registers) body += "    __syncwarp();\n";
    for (int s : stats) w.bind(s, "s" + std::to_string(s));
  }
  body += row_outputs(w, g, rs, sk.leader, "    ");
  body += elem_outputs_pass(w, g, rs, sk.elem_loop, vw);
  w.clear_vector_sources();
  if (!cached.empty() && !in_registers)  // the next row overwrites the cache: every thread must be done with this one
    body += ks.strategy == Strategy::warp ? "    __syncwarp();\n" : "    __syncthreads();\n";
  std::string s = kernel_header(cx.partition, g, ks, name);
  const int64_t register_floats = in_registers ? slots * int64_t(cached.size()) : 0;
  s += "extern \"C\" __global__ void " + cluster_dims(C) + launch_bounds(ks, smem, register_floats) + " " + name + "(" + w.params() + ") {\n";
  if (ks.strategy == Strategy::block) s += "  __shared__ double kf_scratch[128];\n  __shared__ KfArg kf_ascratch[32];\n";
  if (C > 1)
    s += "  __shared__ double kf_cpart[4];  // two slots of the block's totals, read by the cluster (kf_cluster_reduce)\n"
         "  __shared__ KfArg kf_capart[2];\n  const unsigned kf_crank = kf_cluster_rank();\n  unsigned kf_cround = 0;\n";
  if (!cached.empty() && !in_registers)
    s += "  extern __shared__ " + std::string(bulk ? "__align__(16) " : "") + "float kf_row[];  // " + std::to_string(cached.size()) + " cached row buffer(s)" +
         (bulk ? ", two of each" : "") + "\n";
  for (size_t i = 0; in_registers && i < cached.size(); ++i)
    s += "  float kf_reg" + std::to_string(i) + "[" + std::to_string(slots) + "];  // this thread's elements of cached row buffer " +
         std::to_string(i) + "\n";
  if (bulk && !cached.empty()) {
    s += br.prologue(K);
    s += "  for (i64 k = blockIdx.x, kf_it = 0; k < " + K + "; k += gridDim.x, ++kf_it) {\n" + body + "  }\n}\n";
  } else {
    // A cluster's blocks leave together: none may exit while another still reads its shared memory.
    s += "  " + sk.row_loop + " {\n" + body + "  }\n" + (C > 1 ? "  kf_cluster_sync();\n" : "") + "}\n";
  }
  PlanKernel k = make_kernel(g, ks, name, s, w, sk.blocks, ks.block);
  k.smem = int(smem);
  // A bulk row's block prefetches its next row: the grid is what the GPU holds at once, not a block a row.
  k.persistent = bulk && !cached.empty();
  return {k};
}

}  // namespace kforge
