// Row kernels: reductions over the axes of an iteration shape S, fused with the elementwise work that
// uses them. For each row (a point of the kept dims) the kernel makes one pass over the row per
// statistic, in order (softmax: max, then sum of exp), computes the row outputs, then one last pass
// writes the elementwise outputs. Rows are re-read from memory on each pass; L1/L2 serve most re-reads
// of short rows.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "codegen/emitters.h"
#include "ir/error.h"
#include "ir/graph.h"

namespace kforge {

namespace {

struct RowShape {
  std::vector<int64_t> kept, axes;
  int64_t K = 1, R = 1;
  bool axes_are_suffix = true;
  // Sites in a row get `lin`, the element's linear index, even where the reduced dims are not the innermost
  // (computed from the coordinates): the tile's row cache needs to know which reads are of the element itself.
  bool linear_everywhere = false;
};

RowShape row_shape_of(const KernelGroup& g) {
  RowShape rs;
  rs.axes = g.axes;
  for (size_t d = 0; d < g.shape.size(); ++d) {
    bool reduced = std::find(g.axes.begin(), g.axes.end(), int64_t(d)) != g.axes.end();
    (reduced ? rs.R : rs.K) *= g.shape[d];
    if (!reduced) rs.kept.push_back(int64_t(d));
  }
  rs.axes_are_suffix = reduces_innermost(g);
  return rs;
}

std::string op_struct(const std::string& kind) {
  if (kind == "sum") return "KfSum";
  if (kind == "prod") return "KfProd";
  if (kind == "var") return "KfVar";
  if (kind == "max") return "KfMax";
  return "KfMin";
}
bool is_arg(const std::string& kind) { return kind == "argmax" || kind == "argmin"; }
// The max statistic `s` is computed together with (KernelGroup::online_max), or -1.
int online_max_of(const KernelGroup& g, int s) {
  for (size_t i = 0; i < g.stats.size() && i < g.online_max.size(); ++i)
    if (g.stats[i] == s) return g.online_max[i];
  return -1;
}
// The accumulator struct of statistic `s` (device_prelude.cpp).
std::string stat_op(const Graph& gr, const KernelGroup& g, int s) {
  return online_max_of(g, s) >= 0 ? "KfOnlineSumExp" : op_struct(gr.at(s).attr_s("kind"));
}
std::string is_max(const std::string& kind) { return kind == "argmax" ? "true" : "false"; }

// `__launch_bounds__` of a row kernel: where a row cache lets an SM hold fewer blocks than full occupancy, that
// count, so that ptxas may give each thread the registers it leaves (it otherwise budgets for full occupancy: 32
// registers a thread in 1024-thread blocks). A shared-memory cache holds what fits beside it and the reduction
// scratch; a register cache holds its floats plus ~24 registers of addresses and statistics (26_layer_norm's
// 48 floats a thread in 512-thread blocks: 80 registers and no spill, where two blocks an SM forced 64 and a
// spill).
std::string launch_bounds(const KernelSchedule& ks, int64_t row_cache_smem, int64_t register_floats = 0) {
  const int64_t full = std::min<int64_t>(32, 2048 / ks.block);
  int64_t blocks = full;
  if (row_cache_smem > 0) {
    const int64_t scratch = kMaxRowCache - row_cache_limit(ks) + 1024;  // a tile's per-warp partials; kf_scratch
    blocks = std::clamp<int64_t>(kMaxRowCache / (row_cache_smem + scratch), 1, full);
  }
  if (register_floats > 0) blocks = std::clamp<int64_t>(65536 / (int64_t(ks.block) * (register_floats + 24)), 1, full);
  return "__launch_bounds__(" + std::to_string(ks.block) + (blocks < full ? ", " + std::to_string(blocks) : "") + ")";
}

// A kernel's cluster attribute: C blocks a cluster (compile-time, so a plain launch forms the clusters).
std::string cluster_dims(int C) { return C > 1 ? "__cluster_dims__(" + std::to_string(C) + ", 1, 1) " : ""; }

// The loop skeleton of each strategy.
struct Skeleton {
  std::string row_loop, elem_loop, leader, reduce_f, reduce_arg;
  int64_t blocks;
};

// `items` unrolls the walks along a row: the loads of several iterations do not depend on the accumulator,
// so the compiler issues them together and more bytes are in flight per thread.
std::string unrolled(const KernelSchedule& ks) {
  return ks.items > 1 ? "_Pragma(\"unroll " + std::to_string(ks.items) + "\") " : "";
}

Skeleton skeleton(const KernelSchedule& ks, const RowShape& rs) {
  std::string B = std::to_string(ks.block), K = std::to_string(rs.K) + "LL", R = std::to_string(rs.R) + "LL";
  std::string U = unrolled(ks);
  Skeleton s;
  switch (ks.strategy) {
    case Strategy::block:
      if (const int C = cluster_blocks(ks); C > 1) {  // a cluster of C blocks a row; its rank kf_crank
        const std::string Cs = std::to_string(C);
        s.row_loop = "for (i64 k = blockIdx.x / " + Cs + "; k < " + K + "; k += gridDim.x / " + Cs + ")";
        s.elem_loop = U + "for (i64 r = kf_crank * " + B + " + threadIdx.x; r < " + R + "; r += " + std::to_string(row_walkers(ks)) + ")";
        s.leader = "threadIdx.x == 0 && kf_crank == 0";
        s.reduce_f = "kf_cluster_reduce<OP, " + Cs + ">(ACC, kf_scratch, kf_cpart, kf_cround)";
        s.reduce_arg = "kf_cluster_arg_reduce<MAX, " + Cs + ">(ACC, kf_ascratch, kf_capart, kf_cround)";
        s.blocks = rs.K * C;
        break;
      }
      s.row_loop = "for (i64 k = blockIdx.x; k < " + K + "; k += gridDim.x)";
      s.elem_loop = U + "for (i64 r = threadIdx.x; r < " + R + "; r += " + B + ")";
      s.leader = "threadIdx.x == 0";
      s.reduce_f = "kf_block_reduce<OP>(ACC, kf_scratch)";
      s.reduce_arg = "kf_block_arg_reduce<MAX>(ACC, kf_ascratch)";
      s.blocks = rs.K;
      break;
    case Strategy::warp: {
      std::string W = std::to_string(ks.block / 32);
      s.row_loop = "for (i64 k = (i64)blockIdx.x * " + W + " + (threadIdx.x >> 5); k < " + K + "; k += (i64)gridDim.x * " + W + ")";
      s.elem_loop = U + "for (i64 r = threadIdx.x & 31; r < " + R + "; r += 32)";
      s.leader = "(threadIdx.x & 31) == 0";
      s.reduce_f = "kf_warp_reduce<OP>(ACC)";
      s.reduce_arg = "kf_warp_arg_reduce<MAX>(ACC)";
      s.blocks = (rs.K + ks.block / 32 - 1) / (ks.block / 32);
      break;
    }
    default:  // thread
      s.row_loop = "for (i64 k = (i64)blockIdx.x * " + B + " + threadIdx.x; k < " + K + "; k += (i64)gridDim.x * " + B + ")";
      s.elem_loop = U + "for (i64 r = 0; r < " + R + "; ++r)";
      s.leader = "true";
      s.reduce_f = "ACC";
      s.reduce_arg = "ACC";
      s.blocks = (rs.K + ks.block - 1) / ks.block;
  }
  return s;
}

std::string subst(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// Coordinates of a row point: kept dims from k, reduced dims from r (or 0 for row outputs).
struct Coords {
  std::string stmts, linear;
  std::vector<std::string> c;
};

Coords coords_at(const KernelGroup& g, const RowShape& rs, bool in_row, const std::string& indent) {
  Coords out;
  out.c.assign(g.shape.size(), "0");
  out.stmts = decompose_index("k", rs.kept, g.shape, out.c, indent);
  if (in_row) {
    out.stmts += decompose_index("r", rs.axes, g.shape, out.c, indent);
    if (rs.axes_are_suffix) {
      out.stmts += indent + "const i64 lin = k * " + std::to_string(rs.R) + "LL + r;\n";
      out.linear = "lin";
    } else if (rs.linear_everywhere) {
      std::vector<int64_t> strides = contiguous_strides(g.shape);
      std::string sum;
      for (size_t d = 0; d < g.shape.size(); ++d)
        sum += (d ? " + " : "") + std::string("(i64)") + out.c[d] + " * " + std::to_string(strides[d]) + "LL";
      out.stmts += indent + "const i64 lin = " + sum + ";\n";
      out.linear = "lin";
    }
  } else {
    for (auto a : rs.axes) out.c[a] = "0";
  }
  return out;
}

// A site at row element r: reads of values over the row's dims alone (a norm's weight) index by r itself.
void begin_row_site(KernelWriter& w, const Coords& c, const RowShape& rs, const std::string& indent) {
  w.begin_site(c.c, c.linear, indent);
  if (rs.axes_are_suffix && !c.linear.empty()) w.set_suffix_index(rs.axes.size(), "r");
}

// A walk `V` elements a step (block strategy with vec > 1: reduced dims innermost, R % V == 0): kf_rv counts the
// steps; the buffers read at the element itself are loaded once a step as one 8- or 16-byte vector, from global
// memory at kf_lin or from a bulk row cache (`vector_at`), and its lanes serve the V elements in turn. Wider
// loads put more bytes in flight a thread than scalar ones, as torch.compile's row kernels do.
struct VecWalk {
  int V = 1;
  std::function<std::string(int)> vector_at;  // buffer id -> the step's vector
};

// A vector of V floats (V = 2 or 4), its lanes, and its read at `ptr` (16- or 8-byte aligned).
std::string vector_type(int V) { return V == 4 ? "float4" : "float2"; }
constexpr const char* kVectorLane[] = {".x", ".y", ".z", ".w"};
std::string vector_read(int V, const std::string& ptr) { return "*reinterpret_cast<const " + vector_type(V) + "*>(" + ptr + ")"; }

// One step of a vectorized walk; emit_lane(j) emits lane j's work through `w` (its r, coordinates and lin in
// scope) and returns statements to follow it.
std::string vec_step(KernelWriter& w, const KernelGroup& g, const RowShape& rs, const VecWalk& vw, const std::string& in,
                     const std::function<std::string(int)>& emit_lane) {
  const std::string vt = vector_type(vw.V), V = std::to_string(vw.V), in2 = in + "  ";
  const std::map<int, std::string> saved = w.vector_sources();
  Coords c0 = coords_at(g, rs, true, in2);  // a dry run of lane 0: which buffers it reads at the element itself
  w.clear_contiguous_reads();
  begin_row_site(w, c0, rs, in2);
  emit_lane(0);
  w.take();
  const std::vector<int> vectors(w.contiguous_reads().begin(), w.contiguous_reads().end());
  // Values over the row's dims alone (a norm's weight), read at r: one vector a step too, at kf_rv * V.
  std::vector<int> row_vectors;
  for (int b : w.suffix_reads())
    if (std::find(vectors.begin(), vectors.end(), b) == vectors.end()) row_vectors.push_back(b);
  std::string s = in + "const i64 kf_lin = k * " + std::to_string(rs.R) + "LL + kf_rv * " + V + ";\n";
  for (int b : vectors) s += in + "const " + vt + " kf_v" + std::to_string(b) + " = " + vw.vector_at(b) + ";\n";
  for (int b : row_vectors)
    s += in + "const " + vt + " kf_w" + std::to_string(b) + " = " + vector_read(vw.V, "b" + std::to_string(b) + " + kf_rv * " + V) + ";\n";
  for (int j = 0; j < vw.V; ++j) {
    for (int b : vectors) w.set_vector_source(b, "kf_v" + std::to_string(b) + kVectorLane[j]);
    for (int b : row_vectors) w.set_suffix_source(b, "kf_w" + std::to_string(b) + kVectorLane[j]);
    Coords c = coords_at(g, rs, true, in2);
    begin_row_site(w, c, rs, in2);
    std::string after = emit_lane(j);
    s += in + "{\n" + in2 + "const i64 r = kf_rv * " + V + " + " + std::to_string(j) + ";\n" + c.stmts + w.take() + after + in + "}\n";
  }
  w.set_vector_sources(saved);
  w.clear_suffix_sources();
  return s;
}

// The operand statistic `s` accumulates: an online sum of exp(x - max) steps on x, its max's own operand.
int stat_operand(const Graph& gr, const KernelGroup& g, int s) {
  int m = online_max_of(g, s);
  return gr.at(m >= 0 ? m : s).args[0];
}

// A thread's accumulator of statistic `s`, named acc<s><suffix> (loc<s><suffix> while a float local): its
// declaration, its step on `value` (the element at reduced coordinate c<axes[0]> for arg statistics), and its
// widening to acc for the cross-thread combine (none for arg statistics: they step in KfArg).
struct StatAccumulator {
  std::string decl, step, widen;
};
StatAccumulator stat_accumulator(const Graph& gr, const KernelGroup& g, const RowShape& rs, int s, const std::string& value,
                                 const std::string& suffix, const std::string& indent, const std::string& in) {
  const std::string kind = gr.at(s).attr_s("kind"), acc = "acc" + std::to_string(s) + suffix;
  if (is_arg(kind))
    return {indent + "KfArg " + acc + " = {" + (kind == "argmax" ? "-KF_INF" : "KF_INF") + ", -1};\n",
            in + acc + " = kf_arg_step<" + is_max(kind) + ">(" + acc + ", (float)(" + value + "), c" + std::to_string(rs.axes[0]) + ");\n",
            ""};
  const std::string op = stat_op(gr, g, s), loc = "loc" + std::to_string(s) + suffix;
  return {indent + op + "::L " + loc + " = " + op + "::local_init();\n",
          in + loc + " = " + op + "::add(" + loc + ", (float)(" + value + "));\n",
          indent + op + "::T " + acc + " = " + op + "::widen(" + loc + ");\n"};
}

// One walk over the row accumulating statistics `stats` (which do not read each other) into the thread's
// loc<s>, widened to acc<s> for the cross-thread combine.
// `prefetch` runs at the top of every iteration, after the coordinates (the row cache's fill).
std::string stat_pass(KernelWriter& w, const Graph& gr, const KernelGroup& g, const RowShape& rs,
                      const std::vector<int>& stats, const std::string& loop, const std::string& indent,
                      const std::string& prefetch = "", const VecWalk& vw = {}) {
  std::string in = indent + "  ";
  if (vw.V > 1) {
    std::string decls, widen;
    for (int s : stats) {
      StatAccumulator a = stat_accumulator(gr, g, rs, s, "", "", indent, in);
      decls += a.decl, widen += a.widen;
    }
    std::string step = vec_step(w, g, rs, vw, in, [&](int) {
      std::vector<std::string> values;
      for (int s : stats) values.push_back(w.value(stat_operand(gr, g, s)));
      std::string updates;
      for (size_t i = 0; i < stats.size(); ++i) updates += stat_accumulator(gr, g, rs, stats[i], values[i], "", indent, in + "  ").step;
      return updates;
    });
    return decls + indent + loop + " {\n" + step + indent + "}\n" + widen;
  }
  Coords c = coords_at(g, rs, true, in);
  begin_row_site(w, c, rs, in);
  std::vector<std::string> values;
  for (int s : stats) values.push_back(w.value(stat_operand(gr, g, s)));
  std::string body = w.take();
  std::string decls, updates, widen;
  for (size_t i = 0; i < stats.size(); ++i) {
    StatAccumulator a = stat_accumulator(gr, g, rs, stats[i], values[i], "", indent, in);
    decls += a.decl, updates += a.step, widen += a.widen;
  }
  return decls + indent + loop + " {\n" + c.stmts + prefetch + body + updates + indent + "}\n" + widen;
}

// s<s> from the thread's acc<s><suffix>, combined across threads by reduce_f (reduce_arg for arg statistics).
std::string finish_stat(const Graph& gr, const KernelGroup& g, const RowShape& rs, int s, const std::string& reduce_f,
                        const std::string& reduce_arg, const std::string& indent, const std::string& suffix = "") {
  std::string kind = gr.at(s).attr_s("kind"), acc = "acc" + std::to_string(s) + suffix;
  if (is_arg(kind))
    return indent + "const i64 s" + std::to_string(s) + " = " + subst(subst(reduce_arg, "MAX", is_max(kind)), "ACC", acc) + ".i;\n";
  const std::string op = stat_op(gr, g, s);
  return indent + "const float s" + std::to_string(s) + " = " + op + "::finish(" + subst(subst(reduce_f, "OP", op), "ACC", acc) +
         ", " + std::to_string(rs.R) + ".0);\n";
}

// Two statistics of one walk (a layer norm's mean and variance) combined across a block in one reduction: one
// pair of barriers instead of two, the same arithmetic in the same order (kf_block_reduce2). Block strategy
// without a cluster; not for arg statistics.
bool paired_block_reduce(const Graph& gr, const KernelSchedule& ks, const std::vector<int>& stats) {
  if (ks.strategy != Strategy::block || cluster_blocks(ks) > 1 || stats.size() != 2) return false;
  return !is_arg(gr.at(stats[0]).attr_s("kind")) && !is_arg(gr.at(stats[1]).attr_s("kind"));
}
std::string finish_stat_pair(const Graph& gr, const KernelGroup& g, const RowShape& rs, const std::vector<int>& stats,
                             const std::string& indent) {
  const std::string a = std::to_string(stats[0]), b = std::to_string(stats[1]), n = std::to_string(rs.R) + ".0";
  const std::string opa = stat_op(gr, g, stats[0]), opb = stat_op(gr, g, stats[1]);
  return indent + "const auto kf_pair" + a + " = kf_block_reduce2<" + opa + ", " + opb + ">(acc" + a + ", acc" + b + ", kf_scratch);\n" +
         indent + "const float s" + a + " = " + opa + "::finish(kf_pair" + a + ".a, " + n + ");\n" +
         indent + "const float s" + b + " = " + opb + "::finish(kf_pair" + a + ".b, " + n + ");\n";
}

std::string row_outputs(KernelWriter& w, const KernelGroup& g, const RowShape& rs, const std::string& leader,
                        const std::string& indent) {
  if (g.row_outputs.empty()) return "";
  std::string in = indent + "  ";
  Coords c = coords_at(g, rs, false, in);
  w.begin_site(c.c, "", in);
  std::string writes;
  for (int o : g.row_outputs) {
    std::string v = w.value(o);
    writes += in + w.buf(o) + "[" + w.out_index(o) + "] = " + v + ";\n";
  }
  return indent + "if (" + leader + ") {\n" + c.stmts + w.take() + writes + indent + "}\n";
}

// The last pass over the row: every elementwise output at every point of it.
std::string elem_outputs_pass(KernelWriter& w, const KernelGroup& g, const RowShape& rs, const std::string& loop,
                              const VecWalk& vw = {}) {
  if (g.elem_outputs.empty()) return "";
  if (vw.V > 1) {
    // Float outputs written at the element itself leave as one vector a step; the others element by element.
    std::set<int> vector_outs;
    std::string step = vec_step(w, g, rs, vw, "      ", [&](int j) {
      std::string writes;
      for (int o : g.elem_outputs) {
        std::string v = w.value(o), at = w.out_index(o);
        if (at == "lin" && w.ctype(o) == "float") {
          vector_outs.insert(o);
          writes += "        kf_o" + std::to_string(o) + "_" + std::to_string(j) + " = " + v + ";\n";
        } else {
          writes += "        " + w.buf(o) + "[" + at + "] = " + v + ";\n";
        }
      }
      return writes;
    });
    std::string decls, stores;
    for (int o : vector_outs) {
      std::string lanes;
      for (int j = 0; j < vw.V; ++j) {
        decls += "      float kf_o" + std::to_string(o) + "_" + std::to_string(j) + ";\n";
        lanes += (j ? ", kf_o" : "kf_o") + std::to_string(o) + "_" + std::to_string(j);
      }
      stores += "      *reinterpret_cast<float" + std::to_string(vw.V) + "*>(" + w.buf(o) + " + kf_lin) = make_float" +
                std::to_string(vw.V) + "(" + lanes + ");\n";
    }
    return "    " + loop + " {\n" + decls + step + stores + "    }\n";
  }
  Coords c = coords_at(g, rs, true, "      ");
  begin_row_site(w, c, rs, "      ");
  std::string writes;
  for (int o : g.elem_outputs) {
    std::string v = w.value(o);
    writes += "      " + w.buf(o) + "[" + w.out_index(o) + "] = " + v + ";\n";
  }
  return "    " + loop + " {\n" + c.stmts + w.take() + writes + "    }\n";
}

// Per-statistic partial results of the split strategy, one Op::T per (row, chunk). Double accumulators
// get 8-byte slots: the IR has no f64, so the temp buffer is typed i64 (only its size matters) and the
// kernels declare it as Op::T.
struct Partials {
  int value = -1, index = -1;  // buffer indices; index only for argmax/argmin
  std::string ctype;
};

std::vector<PlanKernel> emit_split(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                   const std::string& name, const RowShape& rs) {
  const Graph& gr = *cx.partition.graph;
  KF_ASSERT(!has_online_stat(g), "emit_split on a group with an online softmax statistic (check_schedule refuses it)");
  int64_t C = ks.chunks, L = (rs.R + C - 1) / C;
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
  std::string loop = unrolled(ks) + "for (i64 r = chunk * " + std::to_string(L) + "LL + threadIdx.x; r < min((chunk + 1) * " +
                     std::to_string(L) + "LL, " + std::to_string(rs.R) + "LL); r += " + std::to_string(ks.block) + ")";
  std::string pass = stat_pass(w1, gr, g, rs, g.stats, loop, "  ");
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

// Row cache, shared by the strategies that walk whole rows: the buffers the first pass reads at the element
// itself (a dry run of that pass), at most `fit` of them.
std::vector<int> cacheable_buffers(KernelWriter& w, const Graph& gr, const KernelGroup& g, const RowShape& rs,
                                   const std::string& loop, size_t fit) {
  stat_pass(w, gr, g, rs, stats_in_pass(g, 0), loop, "    ");
  w.take();
  std::vector<int> cached(w.contiguous_reads().begin(), w.contiguous_reads().end());
  cached.resize(std::min(cached.size(), fit));
  return cached;
}

// The first pass fills the cache unconditionally (a read under a `where` branch would leave holes), and
// every pass, the first included, reads cached buffer i from `slot(i)`.
std::string fill_row_cache(KernelWriter& w, const std::vector<int>& cached, const std::function<std::string(size_t)>& slot) {
  std::string fill;
  for (size_t i = 0; i < cached.size(); ++i) {
    fill += "      " + slot(i) + " = b" + std::to_string(cached[i]) + "[lin];\n";
    w.set_vector_source(cached[i], slot(i));
  }
  return fill;
}

// A register row's fill as a walk of its own before the first pass: every slot loads, its element clamped into
// the row (`r_first` + kf_j * `step`, at most R - 1) and, where `k_clamped` is given, an idle lane's row into the
// tensor, so the unrolled walk has no branch and all its loads are in flight together. Inside the first pass
// each load sat behind its slot's `if (r < R)`, and the compiler issued them one at a time (PTX of the 2 x 512
// cluster tile of 25_log_softmax_channel_dim: 32 loads in 32 branches; device run 10.3: 1.68 ms against 0.92 for
// tools/microbench/row_cluster.cu's select-guarded loads). The passes then read the slots under their guard.
std::string register_fill_walk(const KernelGroup& g, const RowShape& rs, const std::string& fill, int64_t slots,
                               const std::string& r_first, int64_t step, const std::string& k_clamped = "") {
  if (fill.empty()) return "";
  Coords c = coords_at(g, rs, true, "      ");
  std::string s = "    _Pragma(\"unroll\") for (int kf_j = 0; kf_j < " + std::to_string(slots) + "; ++kf_j) {\n";
  s += "      const i64 r = min(" + r_first + " + (i64)kf_j * " + std::to_string(step) + ", " + std::to_string(rs.R - 1) + "LL);\n";
  if (!k_clamped.empty()) s += "      const i64 k = " + k_clamped + ";\n";
  return s + c.stmts + fill + "    }\n";
}

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

// Thread strategy with vec > 1: a thread owns `vec` neighbouring rows. The innermost dim is kept, so rows
// k0 .. k0 + vec - 1 lie side by side in memory and one 8- or 16-byte load per step of r serves all of them;
// each keeps its own accumulator. Fewer, wider threads: 23_argmin_middle_dim's 327680 columns of 3001 made
// 1.2 waves of one-column threads (device run 8.1: 1.135 ms against torch.compile's 1.022), a tail where
// a fifth of the GPU's threads ran alone; two columns a thread in 64-thread blocks: 0.900 ms (run 8.3, 103% of
// the copy bandwidth; four in 128-thread blocks, 1.051).
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
  std::string decls, step, finish;
  for (int b : vectors) step += "      " + vt + " kf_v" + std::to_string(b) + ";\n";
  step += "      {\n" + in + "const i64 k = k0;\n" + first.stmts;
  for (int b : vectors)
    step += in + "kf_v" + std::to_string(b) + " = " + vector_read(V, "b" + std::to_string(b) + " + lin") + ";\n";
  step += "      }\n";
  for (int j = 0; j < V; ++j) {
    const std::string J = std::to_string(j);
    for (int b : vectors) w.set_vector_source(b, "kf_v" + std::to_string(b) + kVectorLane[j]);
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


// Bulk row cache (RowCache::bulk): each block owns rows k, k + gridDim.x, ... and two row buffers. While it
// works on row k in one, the copy engine fills the other with its next row (cp.async.bulk), so HBM keeps
// streaming through the block's reductions and writes, with no thread issuing a load. Buffer i of a row is at
// kf_row[stage * NB*RP + i * RP + sh + r], sh = the row start's float offset past a 16-byte boundary: the
// middle of the row, 16-byte aligned at both ends, is copied; threads load the 0-3 floats on either side.
struct BulkRow {
  std::vector<int> cached;  // buffer ids, read at the element itself
  int64_t R = 0, RP = 0;    // row length; floats per buffer slot (bulk_row_floats)
  std::string stride() const { return std::to_string(int64_t(cached.size()) * RP); }
  // The 16-byte-aligned middle [lo, hi) of row `row` (an i64 expression), as declarations sh, lo, hi + suffix.
  std::string bounds(const std::string& row, const std::string& sfx, const std::string& in) const {
    const std::string Rs = std::to_string(R) + "LL";
    return in + "const int sh" + sfx + " = (int)((" + row + ") * " + Rs + " & 3);\n" +
           in + "const i64 lo" + sfx + " = (4 - sh" + sfx + ") & 3, hi" + sfx + " = " + Rs + " - ((sh" + sfx + " + " + Rs + ") & 3);\n";
  }
  // Thread 0 starts the copies of row `row` into buffer stage `stage` (both expressions).
  std::string fetch(const std::string& row, const std::string& stage, const std::string& in) const {
    const std::string i2 = in + "  ", bar = "&kf_bar[" + stage + "]";
    std::string s = in + "{\n" + bounds(row, "", i2) + i2 + "float* const dst = kf_row + (" + stage + ") * " + stride() + " + sh + lo;\n";
    s += i2 + "kf_bulk_fence();\n" + i2 + "kf_bulk_expect(" + bar + ", (unsigned)(" + std::to_string(cached.size()) + " * (hi - lo) * 4));\n";
    for (size_t i = 0; i < cached.size(); ++i)
      s += i2 + "kf_bulk_copy(dst + " + std::to_string(int64_t(i) * RP) + ", b" + std::to_string(cached[i]) + " + (" + row +
           ") * " + std::to_string(R) + "LL + lo, (unsigned)((hi - lo) * 4), " + bar + ");\n";
    return s + in + "}\n";
  }
  // The head of row k's iteration kf_it: start the next row's copy, wait for this one's, load the edges.
  std::string row_start(const std::string& K) const {
    std::string s = "    const int kf_stage = (int)(kf_it & 1);\n";
    s += "    if (threadIdx.x == 0 && k + gridDim.x < " + K + ")\n" + fetch("k + gridDim.x", "kf_stage ^ 1", "    ");
    s += bounds("k", "", "    ");
    s += "    float* const kf_cur = kf_row + kf_stage * " + stride() + " + sh;\n";
    s += "    kf_bulk_wait(&kf_bar[kf_stage], (unsigned)(kf_it >> 1) & 1u);\n";
    s += "    if (threadIdx.x < 8) {  // the floats outside the copied middle: [0, lo) and [hi, R)\n";
    s += "      const i64 r = threadIdx.x < 4 ? (i64)threadIdx.x : hi + threadIdx.x - 4;\n";
    s += "      if (threadIdx.x < 4 ? r < lo : r < " + std::to_string(R) + "LL) {\n";
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
  if (ks.cache_row != RowCache::none) {
    // As many row buffers as fit; the rest are re-read from memory.
    size_t fit = in_registers ? size_t(kMaxRegisterRow / slots)
                 : bulk       ? size_t(bulk_cache_limit(ks) / (2 * br.RP * 4))
                              : size_t(kMaxRowCache / row_cache_bytes(g, ks, 1));
    cached = cacheable_buffers(w, gr, g, rs, sk.elem_loop, fit);
    if (bulk) smem = 2 * br.RP * 4 * int64_t(cached.size());
    else if (!in_registers) smem = row_cache_bytes(g, ks, int(cached.size()));
    cache_base += std::to_string(int64_t(cached.size()) * rs.R) + "LL";
  }
  br.cached = cached;
  vw.vector_at = [&](int b) {
    auto at = std::find(cached.begin(), cached.end(), b);
    if (bulk && at != cached.end())
      return vector_read(vw.V, "kf_cur + " + std::to_string(int64_t(at - cached.begin()) * br.RP) + "LL + kf_rv * " + std::to_string(vw.V));
    return vector_read(vw.V, "b" + std::to_string(b) + " + kf_lin");
  };
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
