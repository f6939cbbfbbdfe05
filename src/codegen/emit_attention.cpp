// An attention (ir/attention.h) as one kernel, FlashAttention's loop in fp32 on the CUDA cores: a block takes
// `rows` query rows of one head (Q's tile in shared memory) and walks the keys 64 at a time; for each key tile it
// stages K and V, computes the tile of scores in registers, applies the model's own elementwise work on them (the
// scale, masks, biases: KernelWriter at each score's coordinates), updates each row's running max and sum
// (Milakov & Gimelshein's online softmax), rescales the output accumulated so far and adds the tile's
// probabilities times V. The scores never reach memory; each of Q, K, V is read once a query tile.
// Where the scores are -inf above a diagonal (a causal mask: masked_above), the key tiles wholly beyond it are
// skipped, and the query tiles with the most keys start first.
#include <limits>
#include <optional>

#include "codegen/emitters.h"
#include "codegen/schedule.h"
#include "ir/attention.h"
#include "ir/ops.h"

namespace kforge {

namespace {

std::string L(int64_t v) { return i64_literal(v); }

bool is_const(const Graph& g, int id, double value) {
  const Node& n = g.at(id);
  if (n.op == "expand" || n.op == "cast") return is_const(g, n.args[0], value);
  return n.op == "const" && n.attr_f("value") == value;
}

bool is_nonzero_const(const Graph& g, int id) {
  const Node& n = g.at(id);
  if (n.op == "expand" || n.op == "cast") return is_nonzero_const(g, n.args[0]);
  return n.op == "const" && n.attr_f("value") != 0;
}

// d where node `id` of shape [.., L, S] is nonzero exactly where key - row <= d: a lower triangle (torch.tril) of
// a nonzero constant, or is_causal's mask, seen through casts and leading broadcasts.
std::optional<int64_t> lower_triangle(const Graph& g, int id, const Shape& scores) {
  const Node& n = g.at(id);
  if (n.op == "cast" || (n.op == "expand" && n.type.shape.size() == scores.size())) return lower_triangle(g, n.args[0], scores);
  if (n.op != "triangle" || n.attr_b("upper") || !is_nonzero_const(g, n.args[0])) return {};
  const Shape& s = n.type.shape;
  if (s.size() < 2 || s[s.size() - 2] != scores[scores.size() - 2] || s.back() != scores.back()) return {};
  return n.attr_i("diagonal");
}

// d where the scores `s` are -inf at every key beyond row + d: where(tril, x, -inf) or where(tril == 0, -inf, x)
// (masked_fill), under multiplications and divisions by positive constants.
std::optional<int64_t> masked_above(const Graph& g, int s) {
  const Node& n = g.at(s);
  const Shape& shape = n.type.shape;
  if ((n.op == "mul" || n.op == "div") && g.at(n.args[1]).op == "const" && g.at(n.args[1]).attr_f("value") > 0)
    return masked_above(g, n.args[0]);
  if (n.op == "mul" && g.at(n.args[0]).op == "const" && g.at(n.args[0]).attr_f("value") > 0) return masked_above(g, n.args[1]);
  if (n.op != "where") return {};
  const double inf = std::numeric_limits<double>::infinity();
  if (is_const(g, n.args[2], -inf)) return lower_triangle(g, n.args[0], shape);
  const Node& c = g.at(n.args[0]);
  if (is_const(g, n.args[1], -inf) && c.op == "eq" && is_const(g, c.args[1], 0)) return lower_triangle(g, c.args[0], shape);
  return {};
}

// Whether the value's last dim is the contiguous one in memory (read through a cast, as a half-precision task's).
bool last_dim_contiguous(const Partition& p, int id) {
  const Graph& g = *p.graph;
  while (!is_readable(p, id) && g.at(id).op == "cast") id = g.at(id).args[0];
  if (!is_readable(p, id)) return true;
  const Access a = access_of(p, id);
  return a.strides.empty() || a.strides.back() == 1 || a.shape.back() == 1;
}

// Statements copying operand `x`'s [extent_r][extent_c] tile at (r0, c0) of the head into shared array `dst`
// ([r][stride]); the element (r, c) of the head is x's (r0 + r, c) (or (c, r0 + r) where `transposed`: K's
// [D, S] operand). Zeros beyond the operand. The walk follows x's contiguous dim.
std::string stage(KernelWriter& w, const Partition& p, int x, const std::vector<std::string>& batch, const std::string& dst,
                  int64_t tile_r, int64_t tile_c, int64_t stride, const std::string& r0, int64_t extent_r, int64_t extent_c,
                  bool transposed) {
  const bool c_fastest = last_dim_contiguous(p, x) != transposed;
  std::string s = "  for (int e = threadIdx.x; e < " + std::to_string(tile_r * tile_c) + "; e += " +
                  std::to_string(kAttentionThreads) + ") {\n";
  s += c_fastest ? "    const int r = e / " + std::to_string(tile_c) + ", c = e % " + std::to_string(tile_c) + ";\n"
                 : "    const int r = e % " + std::to_string(tile_r) + ", c = e / " + std::to_string(tile_r) + ";\n";
  s += "    const i64 at = " + r0 + " + r;\n    float x = 0.f;\n";
  s += "    if (at < " + L(extent_r) + " && c < " + std::to_string(extent_c) + ") {\n";
  std::vector<std::string> coords = batch;
  if (transposed) coords.push_back("c"), coords.push_back("at");
  else coords.push_back("at"), coords.push_back("c");
  w.begin_site(coords, "", "      ");
  const std::string v = w.value(x);
  s += w.take() + "      x = " + v + ";\n    }\n";
  s += "    " + dst + "[r * " + std::to_string(stride) + " + c] = x;\n  }\n";
  return s;
}

}  // namespace

std::vector<PlanKernel> emit_attention(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  const Node& att = gr.at(g.anchor);
  const int qk = scores_product_of(gr, att);
  const int q = gr.at(qk).args[0], kt = gr.at(qk).args[1], scores = att.args[0], v = att.args[1];
  const AttentionDims& d = *g.attention;
  const AttentionTile t = attention_tile(g, ks);
  const int R = ks.items;
  const std::string QS = std::to_string(t.q_stride()), PS = std::to_string(t.p_stride()), DVP = std::to_string(t.value_head);
  const std::string ROWS = std::to_string(t.rows), KEYS = std::to_string(t.keys);
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);

  std::string b;
  b += "#ifdef __CUDA_ARCH__\n  extern __shared__ __align__(16) float kf_smem[];\n#else\n  alignas(16) static float kf_smem[" +
       L(t.smem_floats()) + "];\n#endif\n";
  b += "  float* Qs = kf_smem;                     // [" + ROWS + "][" + QS + "] the block's query rows\n";
  b += "  float* Ks = Qs + " + std::to_string(t.rows * t.q_stride()) + ";   // [" + KEYS + "][" + QS + "] a key tile\n";
  b += "  float* Vs = Ks + " + std::to_string(t.keys * t.q_stride()) + ";   // [" + KEYS + "][" + DVP + "] its values\n";
  b += "  float* Ps = Vs + " + std::to_string(t.keys * t.value_head) + ";   // [" + ROWS + "][" + PS + "] its probabilities\n";
  b += "  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;\n";
  // Blocks in order of their query tile from the last (the most keys under a causal mask) to the first.
  b += "  const i64 head = (i64)blockIdx.x % " + L(d.heads) + ";\n";
  b += "  const i64 q0 = (" + L(t.tiles - 1) + " - (i64)blockIdx.x / " + L(d.heads) + ") * " + ROWS + ";\n";
  const size_t rank = g.shape.size();
  std::vector<int64_t> batch_dims;
  for (size_t i = 0; i + 2 < rank; ++i) batch_dims.push_back(int64_t(i));
  std::vector<std::string> coords(rank);
  b += decompose_index("head", batch_dims, g.shape, coords, "  ");
  const std::vector<std::string> batch(coords.begin(), coords.end() - 2);

  b += stage(w, cx.partition, q, batch, "Qs", t.rows, t.head, t.q_stride(), "q0", d.rows, d.head, false);
  const std::optional<int64_t> diagonal = masked_above(gr, scores);
  b += "  const i64 kend = " +
       (diagonal ? "min(" + L(d.keys) + ", max((i64)0, q0 + " + ROWS + " + " + L(*diagonal) + "))" : L(d.keys)) + ";\n";
  b += "  float m[" + std::to_string(R) + "], l[" + std::to_string(R) + "], o[" + std::to_string(R) + "][" +
       std::to_string(4 * t.value_quads) + "];\n";
  b += "#pragma unroll\n  for (int i = 0; i < " + std::to_string(R) + "; ++i) {\n    m[i] = -KF_INF, l[i] = 0.f;\n";
  b += "#pragma unroll\n    for (int c = 0; c < " + std::to_string(4 * t.value_quads) + "; ++c) o[i][c] = 0.f;\n  }\n";
  b += "  for (i64 k0 = 0; k0 < kend; k0 += " + KEYS + ") {\n";
  b += "    __syncthreads();  // the last tile's reads of Ks, Vs and Ps are done (and Qs is written)\n";
  b += stage(w, cx.partition, kt, batch, "Ks", t.keys, t.head, t.q_stride(), "k0", d.keys, d.head, true);
  b += stage(w, cx.partition, v, batch, "Vs", t.keys, t.value_head, t.value_head, "k0", d.keys, d.value_head, false);
  b += "    __syncthreads();\n";
  // The tile of scores: rows ty + 16 i, keys tx + 16 j, four columns of the head a read.
  b += "    float sc[" + std::to_string(R) + "][4];\n";
  b += "#pragma unroll\n    for (int i = 0; i < " + std::to_string(R) + "; ++i)\n#pragma unroll\n      for (int j = 0; j < 4; ++j) sc[i][j] = 0.f;\n";
  b += "    for (int c = 0; c < " + std::to_string(t.head) + "; c += 4) {\n      float4 kv[4];\n";
  b += "#pragma unroll\n      for (int j = 0; j < 4; ++j) kv[j] = *reinterpret_cast<const float4*>(&Ks[(tx + 16 * j) * " + QS + " + c]);\n";
  b += "#pragma unroll\n      for (int i = 0; i < " + std::to_string(R) + "; ++i) {\n";
  b += "        const float4 qv = *reinterpret_cast<const float4*>(&Qs[(ty + 16 * i) * " + QS + " + c]);\n";
  b += "#pragma unroll\n        for (int j = 0; j < 4; ++j)\n";
  b += "          sc[i][j] = fmaf(qv.w, kv[j].w, fmaf(qv.z, kv[j].z, fmaf(qv.y, kv[j].y, fmaf(qv.x, kv[j].x, sc[i][j]))));\n";
  b += "      }\n    }\n";
  // The model's elementwise work on each score, at its coordinates; keys beyond the head's are -inf.
  b += "#pragma unroll\n    for (int i = 0; i < " + std::to_string(R) + "; ++i)\n#pragma unroll\n      for (int j = 0; j < 4; ++j) {\n";
  b += "        const i64 row = q0 + ty + 16 * i, key = k0 + tx + 16 * j;\n        float x = -KF_INF;\n";
  b += "        if (row < " + L(d.rows) + " && key < " + L(d.keys) + ") {\n";
  std::vector<std::string> at = batch;
  at.push_back("row"), at.push_back("key");
  w.begin_site(at, "", "          ");
  w.bind(qk, "sc[i][j]");
  const std::string s_value = w.value(scores);
  b += w.take() + "          x = " + s_value + ";\n        }\n        sc[i][j] = x;\n      }\n";
  w.unbind(qk);
  // Each row's max and sum over the tile (its 16 threads: one half-warp), the running statistics updated; a row
  // with no finite score yet keeps its exponents at 0 (exp(-inf - m) = 0, never -inf + inf).
  b += "#pragma unroll\n    for (int i = 0; i < " + std::to_string(R) + "; ++i) {\n";
  b += "      float mx = fmaxf(fmaxf(sc[i][0], sc[i][1]), fmaxf(sc[i][2], sc[i][3]));\n";
  b += "#pragma unroll\n      for (int lane = 8; lane > 0; lane >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, lane, 16));\n";
  b += "      const float mnew = fmaxf(m[i], mx), base = mnew == -KF_INF ? 0.f : mnew;\n";
  b += "      const float alpha = expf(m[i] - base);\n      float sum = 0.f;\n";
  b += "#pragma unroll\n      for (int j = 0; j < 4; ++j) {\n        sc[i][j] = expf(sc[i][j] - base);\n        sum += sc[i][j];\n";
  b += "        Ps[(ty + 16 * i) * " + PS + " + tx + 16 * j] = sc[i][j];\n      }\n";
  b += "#pragma unroll\n      for (int lane = 8; lane > 0; lane >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, lane, 16);\n";
  b += "      l[i] = l[i] * alpha + sum;\n      m[i] = mnew;\n";
  b += "#pragma unroll\n      for (int c = 0; c < " + std::to_string(4 * t.value_quads) + "; ++c) o[i][c] *= alpha;\n    }\n";
  b += "    __syncthreads();\n";
  // The output's rows ty + 16 i, columns 64 cq + 4 tx .. + 3: four keys' probabilities a read.
  b += "    for (int kk = 0; kk < " + KEYS + "; kk += 4) {\n      float4 pv[" + std::to_string(R) + "];\n";
  b += "#pragma unroll\n      for (int i = 0; i < " + std::to_string(R) + "; ++i) pv[i] = *reinterpret_cast<const float4*>(&Ps[(ty + 16 * i) * " + PS + " + kk]);\n";
  b += "#pragma unroll\n      for (int e = 0; e < 4; ++e)\n#pragma unroll\n        for (int cq = 0; cq < " + std::to_string(t.value_quads) + "; ++cq) {\n";
  b += "          const float4 vv = *reinterpret_cast<const float4*>(&Vs[(kk + e) * " + DVP + " + 64 * cq + 4 * tx]);\n";
  b += "#pragma unroll\n          for (int i = 0; i < " + std::to_string(R) + "; ++i) {\n";
  b += "            const float p = e == 0 ? pv[i].x : e == 1 ? pv[i].y : e == 2 ? pv[i].z : pv[i].w;\n";
  b += "            o[i][4 * cq] = fmaf(p, vv.x, o[i][4 * cq]);\n            o[i][4 * cq + 1] = fmaf(p, vv.y, o[i][4 * cq + 1]);\n";
  b += "            o[i][4 * cq + 2] = fmaf(p, vv.z, o[i][4 * cq + 2]);\n            o[i][4 * cq + 3] = fmaf(p, vv.w, o[i][4 * cq + 3]);\n";
  b += "          }\n        }\n    }\n  }\n";
  // The result (0 / 0 = NaN for a row without a finite score, as PyTorch's softmax), and what the group computes
  // from it.
  b += "#pragma unroll\n  for (int i = 0; i < " + std::to_string(R) + "; ++i)\n#pragma unroll\n    for (int c = 0; c < " +
       std::to_string(4 * t.value_quads) + "; ++c) {\n";
  b += "      const i64 row = q0 + ty + 16 * i, col = 64 * (c / 4) + 4 * tx + c % 4;\n";
  b += "      if (row >= " + L(d.rows) + " || col >= " + L(d.value_head) + ") continue;\n";
  b += "      const float y = o[i][c] / l[i];\n";
  std::vector<std::string> out = batch;
  out.push_back("row"), out.push_back("col");
  w.begin_site(out, "", "      ");
  w.bind(g.anchor, "y");
  std::string writes;
  for (int o : g.elem_outputs) {
    const std::string value = w.value(o);
    writes += "      " + w.buf(o) + "[" + w.out_index(o) + "] = " + value + ";\n";
  }
  b += w.take() + writes + "    }\n";

  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "// " + std::to_string(t.rows) + " query rows a block, keys " + KEYS + " a step; head dims " + std::to_string(d.head) +
       " and " + std::to_string(d.value_head) + (diagonal ? "; keys beyond row + " + std::to_string(*diagonal) + " skipped" : "") + "\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kAttentionThreads) + ") " + name + "(" + w.params() +
       ") {\n" + b + "}\n";
  PlanKernel k = generated_kernel(g, ks, name, s, w.used_buffers(), t.blocks, kAttentionThreads);
  k.smem = int(t.smem_bytes());
  return {k};
}

}  // namespace kforge
