// The pieces every row strategy's emitter shares (emit_row.cpp: the dispatcher and the block and warp
// strategies; emit_row_split.cpp, emit_row_tile.cpp, emit_row_thread.cpp): the row's shape, the kernel's
// skeleton, the walks over a row and their statistics, the row outputs, and the row cache.
#pragma once
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include "codegen/emitters.h"
#include "ir/error.h"
#include "ir/graph.h"

namespace kforge::row_parts {

struct RowShape {
  std::vector<int64_t> kept, axes;
  int64_t K = 1, R = 1;
  bool axes_are_suffix = true;
  // Sites in a row get `lin`, the element's linear index, even where the reduced dims are not the innermost
  // (computed from the coordinates): the tile's row cache needs to know which reads are of the element itself.
  bool linear_everywhere = false;
};

inline RowShape row_shape_of(const KernelGroup& g) {
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

inline std::string op_struct(const std::string& kind) {
  if (kind == "sum") return "KfSum";
  if (kind == "prod") return "KfProd";
  if (kind == "var") return "KfVar";
  if (kind == "max") return "KfMax";
  return "KfMin";
}
inline bool is_arg(const std::string& kind) { return kind == "argmax" || kind == "argmin"; }
// The max statistic `s` is computed together with (KernelGroup::online_max), or -1.
inline int online_max_of(const KernelGroup& g, int s) {
  for (size_t i = 0; i < g.stats.size() && i < g.online_max.size(); ++i)
    if (g.stats[i] == s) return g.online_max[i];
  return -1;
}
// The accumulator struct of statistic `s` (device_prelude.cpp).
inline std::string stat_op(const Graph& gr, const KernelGroup& g, int s) {
  return online_max_of(g, s) >= 0 ? "KfOnlineSumExp" : op_struct(gr.at(s).attr_s("kind"));
}
inline std::string is_max(const std::string& kind) { return kind == "argmax" ? "true" : "false"; }

// `__launch_bounds__` of a row kernel: where a row cache lets an SM hold fewer blocks than full occupancy, that
// count, so that ptxas may give each thread the registers it leaves (it otherwise budgets for full occupancy: 32
// registers a thread in 1024-thread blocks). A shared-memory cache holds what fits beside it and the reduction
// scratch; a register cache holds its floats plus ~24 registers of addresses and statistics (26_layer_norm's
// 48 floats a thread in 512-thread blocks: 80 registers and no spill, where two blocks an SM forced 64 and a
// spill).
inline std::string launch_bounds(const KernelSchedule& ks, int64_t row_cache_smem, int64_t register_floats = 0) {
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
inline std::string cluster_dims(int C) { return C > 1 ? "__cluster_dims__(" + std::to_string(C) + ", 1, 1) " : ""; }

// The loop skeleton of each strategy.
struct Skeleton {
  std::string row_loop, elem_loop, leader, reduce_f, reduce_arg;
  int64_t blocks;
};

// `items` unrolls the walks along a row: the loads of several iterations do not depend on the accumulator,
// so the compiler issues them together and more bytes are in flight per thread.
inline std::string unrolled(const KernelSchedule& ks) {
  return ks.items > 1 ? "_Pragma(\"unroll " + std::to_string(ks.items) + "\") " : "";
}

inline Skeleton skeleton(const KernelSchedule& ks, const RowShape& rs) {
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

inline std::string subst(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// Coordinates of a row point: kept dims from k, reduced dims from r (or 0 for row outputs).
struct Coords {
  std::string stmts, linear;
  std::vector<std::string> c;
};

inline Coords coords_at(const KernelGroup& g, const RowShape& rs, bool in_row, const std::string& indent) {
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
inline void begin_row_site(KernelWriter& w, const Coords& c, const RowShape& rs, const std::string& indent) {
  w.begin_site(c.c, c.linear, indent);
  if (rs.axes_are_suffix && !c.linear.empty()) w.set_suffix_index(rs.axes.size(), "r");
}

// A walk `V` elements a step (block strategy with vec > 1: reduced dims innermost, R % V == 0): kf_rv counts the
// steps; the buffers read at the element itself are loaded once a step as one 8- or 16-byte vector, from global
// memory at kf_lin or from a bulk row cache (`vector_at`), and its lanes serve the V elements in turn. Wider
// loads put more bytes in flight a thread than scalar ones, as torch.compile's row kernels do.
struct VecWalk {
  int V = 1;
  std::function<std::string(int)> vector_at;       // f32 buffer id -> the step's vector
  std::function<std::string(int)> half_vector_at;  // half-precision buffer id -> its patterns' vector (or from memory)
};

// A vector of V floats (V = 2 or 4), its lanes, and its read at `ptr` (16- or 8-byte aligned).
inline std::string vector_type(int V) { return V == 4 ? "float4" : "float2"; }
inline constexpr const char* kVectorLane[] = {".x", ".y", ".z", ".w"};
inline std::string vector_read(int V, const std::string& ptr) { return "*reinterpret_cast<const " + vector_type(V) + "*>(" + ptr + ")"; }
// Half-precision buffers move V 16-bit patterns a load (4 or 8 bytes); lane j is the j-th pattern, the lower bits
// first (little-endian, on the GPU and the CPU runner alike), converted by the cast that reads it.
inline std::string half_vector_type(int V) { return V == 4 ? "uint2" : "unsigned int"; }
inline std::string half_vector_read(int V, const std::string& ptr) {
  return "*reinterpret_cast<const " + half_vector_type(V) + "*>(" + ptr + ")";
}
inline std::string half_lane(int V, const std::string& v, int j) {
  const std::string word = V == 4 ? v + (j < 2 ? ".x" : ".y") : v;
  return "((unsigned short)(" + word + ((j & 1) ? " >> 16" : "") + "))";
}
// The vector of V patterns `lanes[0..V)` (unsigned short values), as half_vector_type(V).
inline std::string half_vector_of(int V, const std::vector<std::string>& lanes) {
  auto pair = [&](int j) { return "((unsigned)" + lanes[size_t(j)] + " | ((unsigned)" + lanes[size_t(j) + 1] + " << 16))"; };
  return V == 4 ? "make_uint2(" + pair(0) + ", " + pair(2) + ")" : pair(0);
}

// One step of a vectorized walk; emit_lane(j) emits lane j's work through `w` (its r, coordinates and lin in
// scope) and returns statements to follow it.
inline std::string vec_step(KernelWriter& w, const KernelGroup& g, const RowShape& rs, const VecWalk& vw, const std::string& in,
                     const std::function<std::string(int)>& emit_lane) {
  const std::string vt = vector_type(vw.V), V = std::to_string(vw.V), in2 = in + "  ";
  const std::map<int, std::string> saved = w.vector_sources();
  Coords c0 = coords_at(g, rs, true, in2);  // a dry run of lane 0: which buffers it reads at the element itself
  w.clear_contiguous_reads();
  begin_row_site(w, c0, rs, in2);
  emit_lane(0);
  w.take();
  const std::vector<int> vectors(w.contiguous_reads().begin(), w.contiguous_reads().end());
  const std::vector<int> halves(w.contiguous_half_reads().begin(), w.contiguous_half_reads().end());
  // Values over the row's dims alone (a norm's weight), read at r: one vector a step too, at kf_rv * V.
  std::vector<int> row_vectors;
  for (int b : w.suffix_reads())
    if (std::find(vectors.begin(), vectors.end(), b) == vectors.end()) row_vectors.push_back(b);
  std::string s = in + "const i64 kf_lin = k * " + std::to_string(rs.R) + "LL + kf_rv * " + V + ";\n";
  for (int b : vectors) s += in + "const " + vt + " kf_v" + std::to_string(b) + " = " + vw.vector_at(b) + ";\n";
  for (int b : halves)
    s += in + "const " + half_vector_type(vw.V) + " kf_h" + std::to_string(b) + " = " +
         (vw.half_vector_at ? vw.half_vector_at(b) : half_vector_read(vw.V, "b" + std::to_string(b) + " + kf_lin")) + ";\n";
  for (int b : row_vectors)
    s += in + "const " + vt + " kf_w" + std::to_string(b) + " = " + vector_read(vw.V, "b" + std::to_string(b) + " + kf_rv * " + V) + ";\n";
  for (int j = 0; j < vw.V; ++j) {
    for (int b : vectors) w.set_vector_source(b, "kf_v" + std::to_string(b) + kVectorLane[j]);
    for (int b : halves) w.set_vector_source(b, half_lane(vw.V, "kf_h" + std::to_string(b), j));
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
inline int stat_operand(const Graph& gr, const KernelGroup& g, int s) {
  int m = online_max_of(g, s);
  return gr.at(m >= 0 ? m : s).args[0];
}

// A thread's accumulator of statistic `s`, named acc<s><suffix> (loc<s><suffix> while a float local): its
// declaration, its step on `value` (the element at reduced coordinate c<axes[0]> for arg statistics), and its
// widening to acc for the cross-thread combine (none for arg statistics: they step in KfArg).
struct StatAccumulator {
  std::string decl, step, widen;
};
inline StatAccumulator stat_accumulator(const Graph& gr, const KernelGroup& g, const RowShape& rs, int s, const std::string& value,
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
inline std::string stat_pass(KernelWriter& w, const Graph& gr, const KernelGroup& g, const RowShape& rs,
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
inline std::string finish_stat(const Graph& gr, const KernelGroup& g, const RowShape& rs, int s, const std::string& reduce_f,
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
inline bool paired_block_reduce(const Graph& gr, const KernelSchedule& ks, const std::vector<int>& stats) {
  if (ks.strategy != Strategy::block || cluster_blocks(ks) > 1 || stats.size() != 2) return false;
  return !is_arg(gr.at(stats[0]).attr_s("kind")) && !is_arg(gr.at(stats[1]).attr_s("kind"));
}
inline std::string finish_stat_pair(const Graph& gr, const KernelGroup& g, const RowShape& rs, const std::vector<int>& stats,
                             const std::string& indent) {
  const std::string a = std::to_string(stats[0]), b = std::to_string(stats[1]), n = std::to_string(rs.R) + ".0";
  const std::string opa = stat_op(gr, g, stats[0]), opb = stat_op(gr, g, stats[1]);
  return indent + "const auto kf_pair" + a + " = kf_block_reduce2<" + opa + ", " + opb + ">(acc" + a + ", acc" + b + ", kf_scratch);\n" +
         indent + "const float s" + a + " = " + opa + "::finish(kf_pair" + a + ".a, " + n + ");\n" +
         indent + "const float s" + b + " = " + opb + "::finish(kf_pair" + a + ".b, " + n + ");\n";
}

inline std::string row_outputs(KernelWriter& w, const KernelGroup& g, const RowShape& rs, const std::string& leader,
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
inline std::string elem_outputs_pass(KernelWriter& w, const KernelGroup& g, const RowShape& rs, const std::string& loop,
                              const VecWalk& vw = {}) {
  if (g.elem_outputs.empty()) return "";
  if (vw.V > 1) {
    // Float and half-precision outputs written at the element itself leave as one vector a step; the others
    // element by element.
    std::set<int> vector_outs;
    std::string step = vec_step(w, g, rs, vw, "      ", [&](int j) {
      std::string writes;
      for (int o : g.elem_outputs) {
        std::string v = w.value(o), at = w.out_index(o);
        if (at == "lin" && (w.ctype(o) == "float" || w.ctype(o) == "unsigned short")) {
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
      const bool half = w.ctype(o) != "float";
      std::string lanes;
      std::vector<std::string> names;
      for (int j = 0; j < vw.V; ++j) {
        names.push_back("kf_o" + std::to_string(o) + "_" + std::to_string(j));
        decls += "      " + w.ctype(o) + " " + names.back() + ";\n";
        lanes += (j ? ", " : "") + names.back();
      }
      stores += half ? "      *reinterpret_cast<" + half_vector_type(vw.V) + "*>(" + w.buf(o) + " + kf_lin) = " +
                           half_vector_of(vw.V, names) + ";\n"
                     : "      *reinterpret_cast<float" + std::to_string(vw.V) + "*>(" + w.buf(o) + " + kf_lin) = make_float" +
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

// Row cache, shared by the strategies that walk whole rows: the buffers the first pass reads at the element
// itself (a dry run of that pass), f32 ones first, at most `fit` of them.
inline std::vector<int> cacheable_buffers(KernelWriter& w, const Graph& gr, const KernelGroup& g, const RowShape& rs,
                                   const std::string& loop, size_t fit) {
  stat_pass(w, gr, g, rs, stats_in_pass(g, 0), loop, "    ");
  w.take();
  std::vector<int> cached(w.contiguous_reads().begin(), w.contiguous_reads().end());
  cached.insert(cached.end(), w.contiguous_half_reads().begin(), w.contiguous_half_reads().end());
  cached.resize(std::min(cached.size(), fit));
  return cached;
}

// The first pass fills the cache unconditionally (a read under a `where` branch would leave holes), and
// every pass, the first included, reads cached buffer i from `slot(i)`. A slot is a float: a half-precision
// buffer's 16 bits ride in it as they are (its cast to f32 follows the read, as from memory).
inline std::string fill_row_cache(KernelWriter& w, const std::vector<int>& cached, const std::function<std::string(size_t)>& slot) {
  std::string fill;
  for (size_t i = 0; i < cached.size(); ++i) {
    const std::string b = "b" + std::to_string(cached[i]) + "[lin]";
    const bool half = is_half(w.buffer_dtype(cached[i]));
    fill += "      " + slot(i) + " = " + (half ? "__uint_as_float((unsigned)" + b + ")" : b) + ";\n";
    w.set_vector_source(cached[i], half ? "((unsigned short)__float_as_uint(" + slot(i) + "))" : slot(i));
  }
  return fill;
}

// A register row's fill as a walk of its own before the first pass: every slot loads, its element clamped into
// the row (`r_first` + kf_j * `step`, at most R - 1) and, where `k_clamped` is given, an idle lane's row into the
// tensor, so the unrolled walk has no branch and all its loads are in flight together. Inside the first pass
// each load sat behind its slot's `if (r < R)`, and the compiler issued them one at a time (PTX of the 2 x 512
// cluster tile of 25_log_softmax_channel_dim: 32 loads in 32 branches, 1.68 ms against 0.92 for
// tools/microbench/row_cluster.cu's select-guarded loads). The passes then read the slots under their guard.
inline std::string register_fill_walk(const KernelGroup& g, const RowShape& rs, const std::string& fill, int64_t slots,
                               const std::string& r_first, int64_t step, const std::string& k_clamped = "") {
  if (fill.empty()) return "";
  Coords c = coords_at(g, rs, true, "      ");
  std::string s = "    _Pragma(\"unroll\") for (int kf_j = 0; kf_j < " + std::to_string(slots) + "; ++kf_j) {\n";
  s += "      const i64 r = min(" + r_first + " + (i64)kf_j * " + std::to_string(step) + ", " + std::to_string(rs.R - 1) + "LL);\n";
  if (!k_clamped.empty()) s += "      const i64 k = " + k_clamped + ";\n";
  return s + c.stmts + fill + "    }\n";
}

// The strategies emit_row dispatches to.
std::vector<PlanKernel> emit_split(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                   const std::string& name, const RowShape& rs);
std::vector<PlanKernel> emit_tile(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                  const std::string& name, RowShape rs);
std::vector<PlanKernel> emit_thread_vec(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks,
                                        const std::string& name, RowShape rs);

}  // namespace kforge::row_parts
