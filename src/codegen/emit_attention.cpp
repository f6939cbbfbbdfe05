// An attention (ir/attention.h) as one kernel, FlashAttention's loop, in fp32 on the CUDA cores (strategy block) or
// on tensor cores (strategy mma: tf32, or the split tf32x3 for fp32's accuracy; a half-precision task's fp16 or bf16
// values as stored, half_kernel): a block takes
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
std::string cap(const std::string& x) { return x == "k" ? "K" : "V"; }

// The value of the constant node `id` is, seen through broadcasts and casts; none where it is no constant.
std::optional<double> constant(const Graph& g, int id) {
  const Node& n = g.at(id);
  if (n.op == "expand" || n.op == "cast") return constant(g, n.args[0]);
  if (n.op == "const") return n.attr_f("value");
  return std::nullopt;
}

bool is_const(const Graph& g, int id, double value) { return constant(g, id) == value; }

// d where node `id` of shape [.., L, S] is nonzero exactly where key - row <= d: a lower triangle (torch.tril) of
// a nonzero constant, or is_causal's mask, seen through casts and leading broadcasts.
std::optional<int64_t> lower_triangle(const Graph& g, int id, const Shape& scores) {
  const Node& n = g.at(id);
  if (n.op == "cast" || (n.op == "expand" && n.type.shape.size() == scores.size())) return lower_triangle(g, n.args[0], scores);
  if (n.op != "triangle" || n.attr_b("upper") || constant(g, n.args[0]).value_or(0) == 0) return {};
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
// [D, S] operand). Zeros beyond the operand. The walk follows x's contiguous dim. With `split`, dst names two
// arrays of TF32 parts, dst_big and dst_small (kf_split: under split precision the parts of each element are made
// once a tile here, not by every warp reading it). With `half` (the name of a conversion, kf_to_f16 or kf_to_bf16),
// dst holds 16-bit values.
struct StoreAs {
  std::optional<bool> split;
  std::string half;
};
std::string stage(KernelWriter& w, const Partition& p, int x, const std::vector<std::string>& batch, const std::string& dst,
                  int64_t tile_r, int64_t tile_c, int64_t stride, const std::string& r0, int64_t extent_r, int64_t extent_c,
                  bool transposed, int threads, const StoreAs& as = {}) {
  const std::optional<bool>& split = as.split;
  const bool c_fastest = last_dim_contiguous(p, x) != transposed;
  std::string s = "  for (int e = threadIdx.x; e < " + std::to_string(tile_r * tile_c) + "; e += " +
                  std::to_string(threads) + ") {\n";
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
  const std::string at = "r * " + std::to_string(stride) + " + c";
  if (!as.half.empty()) return s + "    " + dst + "[" + at + "] = " + as.half + "(x);\n  }\n";
  if (!split) return s + "    " + dst + "[" + at + "] = x;\n  }\n";
  s += "    unsigned big, small;\n    kf_split(x, big, small, " + std::string(*split ? "true" : "false") + ");\n";
  s += "    " + dst + "_big[" + at + "] = big;\n";
  if (*split) s += "    " + dst + "_small[" + at + "] = small;\n";
  return s + "  }\n";
}

// The same tile by 16-byte asynchronous copies (kf_copy16_async; the caller commits and waits) where operand `x` is,
// through casts, a stored tensor of the tile's 16-bit dtype `half` with its head dim contiguous and every 8 values
// of a row 16-byte aligned: a half-precision task's q, k and v as PyTorch hands them over, which the generic copy
// reads one value a thread at a time, converting each to f32 and back. Rows beyond the operand and the head
// columns the tile pads to 16 are filled with zeros. None where the operand does not qualify.
std::optional<std::string> stage_by_copies(KernelWriter& w, const Partition& p, int x, DType half, const std::vector<std::string>& batch,
                                           const std::string& dst, int64_t tile_r, int64_t tile_c, int64_t stride,
                                           const std::string& r0, int64_t extent_r, int64_t extent_c, bool transposed, int threads) {
  const Graph& g = *p.graph;
  while (!is_readable(p, x) && g.at(x).op == "cast") x = g.at(x).args[0];
  if (!is_readable(p, x) || g.at(x).type.dtype != half || extent_c % 8 || tile_c % 8) return std::nullopt;
  const Access a = access_of(p, x);
  // Batch dims aligned to the right, a dim of 1 read at 0 (broadcast by the product), as KernelWriter reads.
  const size_t rank = a.shape.size();
  if (rank < 2 || rank > batch.size() + 2) return std::nullopt;
  const int64_t stride_r = a.strides[rank - (transposed ? 1 : 2)], stride_c = a.strides[rank - (transposed ? 2 : 1)];
  if (stride_c != 1 || stride_r % 8 || a.offset % 8) return std::nullopt;
  std::string base = L(a.offset);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a.shape[i] == 1 || a.strides[i] == 0) continue;
    if (a.strides[i] % 8) return std::nullopt;
    base += " + " + batch[batch.size() - (rank - 2) + i] + " * " + L(a.strides[i]);
  }
  const int b = w.buffer_id(a.owner);
  w.use_buffer(b, false);
  const std::string chunks = std::to_string(tile_c / 8);
  std::string s = "  for (int e = threadIdx.x; e < " + std::to_string(tile_r * tile_c / 8) + "; e += " + std::to_string(threads) + ") {\n";
  s += "    const int r = e / " + chunks + ", c = e % " + chunks + ";\n";
  s += "    const i64 at = " + r0 + " + r;\n";
  s += "    const bool in = at < " + L(extent_r) + " && c < " + std::to_string(extent_c / 8) + ";\n";
  s += "    kf_copy16_async(&" + dst + "[r * " + std::to_string(stride) + " + 8 * c], b" + std::to_string(b) + " + (in ? " + base +
       " + at * " + L(stride_r) + " + 8 * c : 0), in ? 16u : 0u);\n  }\n";
  return s;
}

// What both strategies share: the operands, the tile, the kernel's opening (shared tiles, the block's head and
// query rows, Q staged, the keys' end) and the statements around a score and an output element.
struct Attention {
  EmitContext& cx;
  const KernelGroup& g;
  const KernelSchedule& ks;
  const Graph& gr;
  int qk, q, kt, scores, v;
  AttentionDims d;
  AttentionTile t;
  std::optional<int64_t> diagonal;
  KernelWriter w;
  std::vector<std::string> batch;  // the head's batch coordinates

  Attention(EmitContext& c, const KernelGroup& group, const KernelSchedule& schedule)
      : cx(c), g(group), ks(schedule), gr(*c.partition.graph), d(*group.attention), t(attention_tile(group, schedule)),
        w(c.partition, group, c.buffer_of_owner) {
    const Node& att = gr.at(g.anchor);
    qk = scores_product_of(gr, att);
    q = gr.at(qk).args[0], kt = gr.at(qk).args[1], scores = att.args[0], v = att.args[1];
    diagonal = masked_above(gr, scores);
  }

  std::string opening() {
    const std::string QS = std::to_string(t.q_stride), ROWS = std::to_string(t.rows), KEYS = std::to_string(t.keys);
    std::string b = "#ifdef __CUDA_ARCH__\n  extern __shared__ __align__(16) float kf_smem[];\n#else\n  alignas(16) static float kf_smem[" +
                    L((t.smem_bytes() + 3) / 4) + "];\n#endif\n";
    const std::string K = std::to_string(t.keys * t.q_stride), V = std::to_string(t.keys * t.v_stride);
    const std::string Q = std::to_string(t.rows * t.q_stride);
    if (!tensor_cores() || t.split_as_read) {
      b += "  float* Qs = kf_smem;  // [" + ROWS + "][" + QS + "] the block's query rows\n";
      b += "  float* Ks = Qs + " + Q + ";  // [" + KEYS + "][" + QS + "] a key tile\n";
      b += "  float* Vs = Ks + " + K + ";  // [" + KEYS + "][" + std::to_string(t.v_stride) + "] its values\n";
      b += "  float* Ps = Vs + " + V + ";  // [" + ROWS + "][" + std::to_string(t.p_stride) + "] its probabilities\n";
    } else if (t.half) {  // 16-bit values; two key tiles (this one and the next)
      b += "  unsigned short* Qs = reinterpret_cast<unsigned short*>(kf_smem);  // [" + ROWS + "][" + QS + "] the block's query rows\n";
      b += "  unsigned short* Ks = Qs + " + Q + ";  // [2][" + KEYS + "][" + QS + "] key tiles\n";
      b += "  unsigned short* Vs = Ks + 2 * " + K + ";  // [2][" + KEYS + "][" + std::to_string(t.v_stride) + "] their values\n";
    } else {  // Q's, K's and V's TF32 parts
      b += "  unsigned* Qs_big = reinterpret_cast<unsigned*>(kf_smem);  // [" + ROWS + "][" + QS + "] the block's query rows\n";
      if (t.parts == 2) b += "  unsigned* Qs_small = Qs_big + " + Q + ";\n";
      b += "  unsigned* Ks_big = Qs_big + " + std::to_string(t.parts) + " * " + Q + ";  // [" + KEYS + "][" + QS + "] a key tile\n";
      if (t.parts == 2) b += "  unsigned* Ks_small = Ks_big + " + K + ";\n";
      b += "  unsigned* Vs_big = Ks_big + " + std::to_string(t.parts) + " * " + K + ";  // [" + KEYS + "][" +
           std::to_string(t.v_stride) + "] its values\n";
      if (t.parts == 2) b += "  unsigned* Vs_small = Vs_big + " + V + ";\n";
      b += "  float* Ps = reinterpret_cast<float*>(Vs_big + " + std::to_string(t.parts) + " * " + V + ");  // [" + ROWS + "][" +
           std::to_string(t.p_stride) + "] its probabilities\n";
    }
    // Blocks in order of their query tile from the last (the most keys under a causal mask) to the first.
    b += "  const i64 head = (i64)blockIdx.x % " + L(d.heads) + ";\n";
    b += "  const i64 q0 = (" + L(t.tiles - 1) + " - (i64)blockIdx.x / " + L(d.heads) + ") * " + ROWS + ";\n";
    const size_t rank = g.shape.size();
    std::vector<int64_t> batch_dims;
    for (size_t i = 0; i + 2 < rank; ++i) batch_dims.push_back(int64_t(i));
    std::vector<std::string> coords(rank);
    b += decompose_index("head", batch_dims, g.shape, coords, "  ");
    batch.assign(coords.begin(), coords.end() - 2);
    b += stage_operand(q, "Qs", t.rows, t.head, t.q_stride, "q0", d.rows, d.head, false);
    b += "  const i64 kend = " +
         (diagonal ? "min(" + L(d.keys) + ", max((i64)0, q0 + " + ROWS + " + " + L(*diagonal) + "))" : L(d.keys)) + ";\n";
    return b;
  }

  bool tensor_cores() const { return ks.strategy == Strategy::mma; }
  // The conversion to the task's 16-bit dtype (t.half).
  std::string to_half() const { return ks.precision == Precision::bf16 ? "kf_to_bf16" : "kf_to_f16"; }
  StoreAs store_as() const {
    StoreAs as;
    if (t.half) as.half = to_half();
    else if (tensor_cores() && !t.split_as_read) as.split = t.parts == 2;
    return as;
  }

  // Operand x's tile into `dst` (see stage; 16-bit tiles by asynchronous copies where the operand allows).
  std::string stage_operand(int x, const std::string& dst, int64_t tile_r, int64_t tile_c, int64_t stride, const std::string& r0,
                            int64_t extent_r, int64_t extent_c, bool transposed) {
    if (t.half)
      if (auto copies = stage_by_copies(w, cx.partition, x, *g.half_operands, batch, dst, tile_r, tile_c, stride, r0, extent_r, extent_c,
                                        transposed, ks.block))
        return *copies;
    return stage(w, cx.partition, x, batch, dst, tile_r, tile_c, stride, r0, extent_r, extent_c, transposed, ks.block, store_as());
  }

  // K's and V's tiles at key `k0` into Kdst and Vdst (on tensor cores, their TF32 parts or 16-bit values).
  std::string stage_keys(const std::string& k0, const std::string& Kdst, const std::string& Vdst) {
    return stage_operand(kt, Kdst, t.keys, t.head, t.q_stride, k0, d.keys, d.head, true) +
           stage_operand(v, Vdst, t.keys, t.value_head, t.v_stride, k0, d.keys, d.value_head, false);
  }

  // Score `reg` (the product's value) through the model's elementwise work at (row, key); -inf beyond the head.
  std::string score(const std::string& row, const std::string& key, const std::string& reg, const std::string& indent) {
    std::string b = indent + "{\n" + indent + "  const i64 row = " + row + ", key = " + key + ";\n" + indent + "  float x = -KF_INF;\n";
    b += indent + "  if (row < " + L(d.rows) + " && key < " + L(d.keys) + ") {\n";
    std::vector<std::string> at = batch;
    at.push_back("row"), at.push_back("key");
    w.begin_site(at, "", indent + "    ");
    w.bind(qk, reg);
    const std::string value = w.value(scores);
    w.unbind(qk);
    return b + w.take() + indent + "    x = " + value + ";\n" + indent + "  }\n" + indent + "  " + reg + " = x;\n" + indent + "}\n";
  }

  // The result y at (row, col), and what the group computes from it, written where inside the head.
  std::string output(const std::string& row, const std::string& col, const std::string& y, const std::string& indent) {
    std::string b = indent + "{\n" + indent + "  const i64 row = " + row + ", col = " + col + ";\n";
    b += indent + "  if (row < " + L(d.rows) + " && col < " + L(d.value_head) + ") {\n" + indent + "    const float y = " + y + ";\n";
    std::vector<std::string> out = batch;
    out.push_back("row"), out.push_back("col");
    w.begin_site(out, "", indent + "    ");
    w.bind(g.anchor, "y");
    std::string writes;
    for (int o : g.elem_outputs) {
      const std::string value = w.value(o);
      writes += indent + "    " + w.buf(o) + "[" + w.out_index(o) + "] = " + value + ";\n";
    }
    return b + w.take() + writes + indent + "  }\n" + indent + "}\n";
  }

  // `min_blocks`: blocks an SM should hold at once (registers capped to fit them), as __launch_bounds__ takes it.
  PlanKernel kernel(const std::string& name, const std::string& body, const std::string& what, int min_blocks = 1) {
    std::string s = kernel_header(cx.partition, g, ks, name);
    s += "// " + what + ": " + std::to_string(t.rows) + " query rows a block, keys " + std::to_string(t.keys) + " a step; head dims " +
         std::to_string(d.head) + " and " + std::to_string(d.value_head) +
         (diagonal ? "; keys beyond row + " + std::to_string(*diagonal) + " skipped" : "") + "\n";
    s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ks.block) +
         (min_blocks > 1 ? ", " + std::to_string(min_blocks) : "") + ") " + name + "(" + w.params() +
         ") {\n" + body + "}\n";
    PlanKernel k = generated_kernel(g, ks, name, s, w.used_buffers(), t.blocks, ks.block);
    k.smem = int(t.smem_bytes());
    return k;
  }
};

// Strategy block: fp32 on the CUDA cores (AttentionTile's thread layout).
PlanKernel cuda_core_kernel(Attention& a, const std::string& name) {
  const AttentionTile& t = a.t;
  const std::string R = std::to_string(a.ks.items), QS = std::to_string(t.q_stride), PS = std::to_string(t.p_stride),
                    VS = std::to_string(t.v_stride), KEYS = std::to_string(t.keys), OC = std::to_string(4 * t.value_quads);
  std::string b = a.opening();
  b += "  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;\n";
  b += "  float m[" + R + "], l[" + R + "], o[" + R + "][" + OC + "];\n";
  b += "#pragma unroll\n  for (int i = 0; i < " + R + "; ++i) {\n    m[i] = -KF_INF, l[i] = 0.f;\n";
  b += "#pragma unroll\n    for (int c = 0; c < " + OC + "; ++c) o[i][c] = 0.f;\n  }\n";
  b += "  for (i64 k0 = 0; k0 < kend; k0 += " + KEYS + ") {\n";
  b += "    __syncthreads();  // the last tile's reads of Ks, Vs and Ps are done (and Qs is written)\n";
  b += a.stage_keys("k0", "Ks", "Vs") + "    __syncthreads();\n";
  // The tile of scores: rows ty + 16 i, keys tx + 16 j, four columns of the head a read.
  b += "    float sc[" + R + "][4];\n";
  b += "#pragma unroll\n    for (int i = 0; i < " + R + "; ++i)\n#pragma unroll\n      for (int j = 0; j < 4; ++j) sc[i][j] = 0.f;\n";
  b += "    for (int c = 0; c < " + std::to_string(t.head) + "; c += 4) {\n      float4 kv[4];\n";
  b += "#pragma unroll\n      for (int j = 0; j < 4; ++j) kv[j] = *reinterpret_cast<const float4*>(&Ks[(tx + 16 * j) * " + QS + " + c]);\n";
  b += "#pragma unroll\n      for (int i = 0; i < " + R + "; ++i) {\n";
  b += "        const float4 qv = *reinterpret_cast<const float4*>(&Qs[(ty + 16 * i) * " + QS + " + c]);\n";
  b += "#pragma unroll\n        for (int j = 0; j < 4; ++j)\n";
  b += "          sc[i][j] = fmaf(qv.w, kv[j].w, fmaf(qv.z, kv[j].z, fmaf(qv.y, kv[j].y, fmaf(qv.x, kv[j].x, sc[i][j]))));\n";
  b += "      }\n    }\n";
  b += "#pragma unroll\n    for (int i = 0; i < " + R + "; ++i)\n#pragma unroll\n      for (int j = 0; j < 4; ++j)\n";
  b += a.score("q0 + ty + 16 * i", "k0 + tx + 16 * j", "sc[i][j]", "        ");
  // Each row's max and sum over the tile (its 16 threads: one half-warp), the running statistics updated.
  b += "#pragma unroll\n    for (int i = 0; i < " + R + "; ++i) {\n";
  b += "      float mx = fmaxf(fmaxf(sc[i][0], sc[i][1]), fmaxf(sc[i][2], sc[i][3]));\n";
  b += "#pragma unroll\n      for (int lane = 8; lane > 0; lane >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, lane, 16));\n";
  b += "      float alpha, sum = 0.f;\n      const float base = kf_online_max(m[i], mx, alpha);\n";
  b += "#pragma unroll\n      for (int j = 0; j < 4; ++j) {\n        sc[i][j] = expf(sc[i][j] - base);\n        sum += sc[i][j];\n";
  b += "        Ps[(ty + 16 * i) * " + PS + " + tx + 16 * j] = sc[i][j];\n      }\n";
  b += "#pragma unroll\n      for (int lane = 8; lane > 0; lane >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, lane, 16);\n";
  b += "      l[i] = l[i] * alpha + sum;\n";
  b += "#pragma unroll\n      for (int c = 0; c < " + OC + "; ++c) o[i][c] *= alpha;\n    }\n";
  b += "    __syncthreads();\n";
  // The output's rows ty + 16 i, columns 64 cq + 4 tx .. + 3: four keys' probabilities a read.
  b += "    for (int kk = 0; kk < " + KEYS + "; kk += 4) {\n      float4 pv[" + R + "];\n";
  b += "#pragma unroll\n      for (int i = 0; i < " + R + "; ++i) pv[i] = *reinterpret_cast<const float4*>(&Ps[(ty + 16 * i) * " + PS + " + kk]);\n";
  b += "#pragma unroll\n      for (int e = 0; e < 4; ++e)\n#pragma unroll\n        for (int cq = 0; cq < " + std::to_string(t.value_quads) + "; ++cq) {\n";
  b += "          const float4 vv = *reinterpret_cast<const float4*>(&Vs[(kk + e) * " + VS + " + 64 * cq + 4 * tx]);\n";
  b += "#pragma unroll\n          for (int i = 0; i < " + R + "; ++i) {\n";
  b += "            const float p = e == 0 ? pv[i].x : e == 1 ? pv[i].y : e == 2 ? pv[i].z : pv[i].w;\n";
  b += "            o[i][4 * cq] = fmaf(p, vv.x, o[i][4 * cq]);\n            o[i][4 * cq + 1] = fmaf(p, vv.y, o[i][4 * cq + 1]);\n";
  b += "            o[i][4 * cq + 2] = fmaf(p, vv.z, o[i][4 * cq + 2]);\n            o[i][4 * cq + 3] = fmaf(p, vv.w, o[i][4 * cq + 3]);\n";
  b += "          }\n        }\n    }\n  }\n";
  // The result (0 / 0 = NaN for a row without a finite score, as PyTorch's softmax).
  b += "#pragma unroll\n  for (int i = 0; i < " + R + "; ++i)\n#pragma unroll\n    for (int c = 0; c < " + OC + "; ++c)\n";
  b += a.output("q0 + ty + 16 * i", "64 * (c / 4) + 4 * tx + c % 4", "o[i][c] / l[i]", "      ");
  return a.kernel(name, b, "fp32 on the CUDA cores");
}

// The TF32 tensor-core products (strategy mma, mma.sync.m16n8k8): the scores' Q K^T into sc, and the output's P V
// into o, from the staged TF32 parts, every product three under tf32x3 (big big + big small + small big: about fp32's
// accuracy).
struct TensorCoreProducts {
  std::string scores, values, probability;  // the two loops, and the type P is stored as (of float p)
};

TensorCoreProducts tf32_products(const Attention& a) {
  const AttentionTile& t = a.t;
  const std::string QS = std::to_string(t.q_stride), PS = std::to_string(t.p_stride), VS = std::to_string(t.v_stride);
  const std::string NK = std::to_string(t.keys / 8), NV = std::to_string(t.value_head / 8);
  const bool split = a.ks.precision == Precision::tf32x3;
  // c += x y as one product, or the split's three (the small terms first: they are the smaller).
  auto product = [&](const std::string& c, const std::string& x, const std::string& y) {
    return split ? "kf_mma(" + c + ", " + x + "_small, " + y + "_big); kf_mma(" + c + ", " + x + "_big, " + y + "_small); kf_mma(" +
                       c + ", " + x + "_big, " + y + "_big);"
                 : "kf_mma(" + c + ", " + x + "_big, " + y + "_big);";
  };
  // A fragment's parts: big (and small) of the K or V tile at two indices, as staged or split as read.
  auto fragment = [&](const std::string& x, const std::string& i0, const std::string& i1) {
    if (t.split_as_read) {
      std::string f = "        unsigned " + x + "_big[2], " + x + "_small[2];\n";
      f += "        kf_split(" + cap(x) + "s[" + i0 + "], " + x + "_big[0], " + x + "_small[0], " + (split ? "true" : "false") + ");\n";
      return f + "        kf_split(" + cap(x) + "s[" + i1 + "], " + x + "_big[1], " + x + "_small[1], " + (split ? "true" : "false") + ");\n";
    }
    std::string f = "        unsigned " + x + "_big[2] = {" + cap(x) + "s_big[" + i0 + "], " + cap(x) + "s_big[" + i1 + "]};\n";
    if (split) f += "        unsigned " + x + "_small[2] = {" + cap(x) + "s_small[" + i0 + "], " + cap(x) + "s_small[" + i1 + "]};\n";
    return f;
  };
  TensorCoreProducts p;
  p.scores = "    for (int kk = 0; kk < " + std::to_string(t.head) + "; kk += 8) {\n";
  const std::string q_at[4] = {"(r0 + g) * " + QS + " + kk + t", "(r0 + g + 8) * " + QS + " + kk + t",
                               "(r0 + g) * " + QS + " + kk + t + 4", "(r0 + g + 8) * " + QS + " + kk + t + 4"};
  if (t.split_as_read) {
    p.scores += "      unsigned q_big[4], q_small[4];\n";
    for (int i = 0; i < 4; ++i)
      p.scores += "      kf_split(Qs[" + q_at[i] + "], q_big[" + std::to_string(i) + "], q_small[" + std::to_string(i) + "], " +
                  (split ? "true" : "false") + ");\n";
  }
  for (const std::string part : {"big", "small"}) {
    if (t.split_as_read || (part == "small" && !split)) continue;
    p.scores += "      const unsigned q_" + part + "[4] = {";
    for (int i = 0; i < 4; ++i) p.scores += std::string(i ? ", " : "") + "Qs_" + part + "[" + q_at[i] + "]";
    p.scores += "};\n";
  }
  p.scores += "#pragma unroll\n      for (int n = 0; n < " + NK + "; ++n) {\n";
  p.scores += fragment("k", "(8 * n + g) * " + QS + " + kk + t", "(8 * n + g) * " + QS + " + kk + t + 4");
  p.scores += "        " + product("sc[0][n]", "q", "k") + "\n      }\n    }\n";
  const std::string SPLIT = split ? "true" : "false";
  p.values = "    for (int kk = 0; kk < " + std::to_string(t.keys) + "; kk += 8) {\n      unsigned p_big[4], p_small[4];\n";
  p.values += "      kf_split(Ps[(r0 + g) * " + PS + " + kk + t], p_big[0], p_small[0], " + SPLIT + ");\n";
  p.values += "      kf_split(Ps[(r0 + g + 8) * " + PS + " + kk + t], p_big[1], p_small[1], " + SPLIT + ");\n";
  p.values += "      kf_split(Ps[(r0 + g) * " + PS + " + kk + t + 4], p_big[2], p_small[2], " + SPLIT + ");\n";
  p.values += "      kf_split(Ps[(r0 + g + 8) * " + PS + " + kk + t + 4], p_big[3], p_small[3], " + SPLIT + ");\n";
  p.values += "#pragma unroll\n      for (int n = 0; n < " + NV + "; ++n) {\n";
  p.values += fragment("v", "(kk + t) * " + VS + " + 8 * n + g", "(kk + t + 4) * " + VS + " + 8 * n + g");
  p.values += "        " + product("o[0][n]", "p", "v") + "\n      }\n    }\n";
  p.probability = "p";
  return p;
}

// Both tensor-core kernels' lanes (lane 4 g + t of warp w, whose rows are `tiles` tiles of 16 from r0) and their
// state, for each tile: rows g and g + 8's running max m and sum l, and the output's Dv / 8 accumulator tiles o.
std::string warp_state(const AttentionTile& t, int tiles) {
  const std::string NV = std::to_string(t.value_head / 8), MT = std::to_string(tiles);
  std::string b = "  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;\n";
  b += "  const int r0 = " + std::to_string(16 * tiles) + " * warp;  // the warp's rows of the block's\n";
  b += "  float m[" + MT + "][2], l[" + MT + "][2], o[" + MT + "][" + NV + "][4];\n";
  b += "#pragma unroll\n  for (int mt = 0; mt < " + MT + "; ++mt) {\n";
  b += "    m[mt][0] = m[mt][1] = -KF_INF, l[mt][0] = l[mt][1] = 0.f;\n";
  return b + "#pragma unroll\n    for (int n = 0; n < " + NV + "; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;\n  }\n";
}

// The key tile's scores sc[tiles][keys / 8][4], zeroed for the products.
std::string zeroed_scores(const AttentionTile& t, int tiles) {
  const std::string NK = std::to_string(t.keys / 8), MT = std::to_string(tiles);
  return "    float sc[" + MT + "][" + NK + "][4];\n#pragma unroll\n    for (int mt = 0; mt < " + MT +
         "; ++mt)\n#pragma unroll\n      for (int n = 0; n < " + NK + "; ++n) sc[mt][n][0] = sc[mt][n][1] = sc[mt][n][2] = sc[mt][n][3] = 0.f;\n";
}

// What both tensor-core kernels do with a key tile's scores (the mma accumulators' layout), tile mt by tile: the
// model's elementwise work at each score's coordinates, then, for rows g (h = 0) and g + 8 (h = 1), each row's max
// and sum over its four lanes, the running statistics and the output so far rescaled, each probability p = exp(s -
// base) (`exp`, a function of one float) kept by `keep` (a statement naming p, mt, n, e and h).
std::string warp_softmax(Attention& a, int tiles, const std::string& exp, const std::string& keep) {
  const std::string NK = std::to_string(a.t.keys / 8), NV = std::to_string(a.t.value_head / 8);
  std::string b = "#pragma unroll\n    for (int mt = 0; mt < " + std::to_string(tiles) + "; ++mt) {\n";
  b += "#pragma unroll\n    for (int n = 0; n < " + NK + "; ++n)\n#pragma unroll\n      for (int e = 0; e < 4; ++e)\n";
  b += a.score("q0 + r0 + 16 * mt + g + 8 * (e >> 1)", "k0 + 8 * n + 2 * t + (e & 1)", "sc[mt][n][e]", "        ");
  b += "#pragma unroll\n    for (int h = 0; h < 2; ++h) {\n      float mx = -KF_INF;\n";
  b += "#pragma unroll\n      for (int n = 0; n < " + NK + "; ++n) mx = fmaxf(mx, fmaxf(sc[mt][n][2 * h], sc[mt][n][2 * h + 1]));\n";
  b += "      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));\n      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));\n";
  b += "      float alpha, sum = 0.f;\n      const float base = kf_online_max(m[mt][h], mx, alpha);\n";
  b += "#pragma unroll\n      for (int n = 0; n < " + NK + "; ++n)\n#pragma unroll\n        for (int e = 2 * h; e < 2 * h + 2; ++e) {\n";
  b += "          const float p = " + exp + "(sc[mt][n][e] - base);\n          sum += p;\n          " + keep + "\n        }\n";
  b += "      sum += __shfl_xor_sync(0xffffffffu, sum, 1);\n      sum += __shfl_xor_sync(0xffffffffu, sum, 2);\n";
  b += "      l[mt][h] = l[mt][h] * alpha + sum;\n";
  b += "#pragma unroll\n      for (int n = 0; n < " + NV + "; ++n) o[mt][n][2 * h] *= alpha, o[mt][n][2 * h + 1] *= alpha;\n    }\n";
  return b + "    }\n";
}

// The result of every tile's rows: o over l.
std::string warp_output(Attention& a, int tiles) {
  const std::string NV = std::to_string(a.t.value_head / 8);
  std::string b = "#pragma unroll\n  for (int mt = 0; mt < " + std::to_string(tiles) + "; ++mt)\n";
  b += "#pragma unroll\n  for (int n = 0; n < " + NV + "; ++n)\n#pragma unroll\n    for (int e = 0; e < 4; ++e)\n";
  return b + a.output("q0 + r0 + 16 * mt + g + 8 * (e >> 1)", "8 * n + 2 * t + (e & 1)", "o[mt][n][e] / l[mt][e >> 1]", "      ");
}

// Strategy mma in TF32: warp w owns rows 16 w .. + 15 of the block's; lane 4 g + t holds, of each 8-key (or 8-column)
// tile, rows g and g + 8, columns 2 t and 2 t + 1 (the mma accumulators' layout).
PlanKernel tensor_core_kernel(Attention& a, const std::string& name) {
  const AttentionTile& t = a.t;
  const std::string PS = std::to_string(t.p_stride), KEYS = std::to_string(t.keys), NV = std::to_string(t.value_head / 8),
                    NK = std::to_string(t.keys / 8);
  const TensorCoreProducts products = tf32_products(a);
  std::string b = a.opening();
  b += warp_state(t, 1);
  b += "  for (i64 k0 = 0; k0 < kend; k0 += " + KEYS + ") {\n";
  b += "    __syncthreads();  // the last tile's reads of K's and V's are done (and Q's is written)\n";
  b += a.stage_keys("k0", "Ks", "Vs") + "    __syncthreads();\n";
  b += zeroed_scores(t, 1) + products.scores;
  b += warp_softmax(a, 1, "expf", "Ps[(r0 + g + 8 * h) * " + PS + " + 8 * n + 2 * t + (e & 1)] = " + products.probability + ";");
  b += "    __syncwarp();  // the warp's probabilities, written by its lanes, read by its lanes\n";
  b += products.values;
  b += "    __syncwarp();  // read before the next tile's probabilities overwrite them\n  }\n";
  b += warp_output(a, 1);
  return a.kernel(name, b, to_string(a.ks.precision) + " on the tensor cores");
}

// Strategy mma on a half-precision task's own 16-bit values (fp16 or bf16, mma.sync.m16n8k16; FlashAttention-2's
// loop): warps and lanes as tensor_core_kernel's. K's and V's tiles are double-buffered: the next tile's copies are
// issued (asynchronous where the operand allows: stage_by_copies) before this tile's products. The probabilities,
// rounded to fp16 as PyTorch's flash attention rounds them (in bf16, as two parts: kf_split_half2), go from the
// scores' accumulators to the second product's a fragments in registers: the accumulators of keys 16 j .. + 7 and
// 16 j + 8 .. + 15 are, packed in pairs, the a fragment of keys 16 j .. + 15. V's b fragments come from its row-major
// tile through ldmatrix's transpose.
PlanKernel half_kernel(Attention& a, const std::string& name) {
  const AttentionTile& t = a.t;
  const int tiles = a.ks.items;  // 16-row tiles a warp: each K and V fragment loaded serves all of them
  const std::string QS = std::to_string(t.q_stride), VS = std::to_string(t.v_stride), KEYS = std::to_string(t.keys),
                    NK = std::to_string(t.keys / 8), NV = std::to_string(t.value_head / 8), MT = std::to_string(tiles);
  const std::string K_TILE = std::to_string(t.keys * t.q_stride), V_TILE = std::to_string(t.keys * t.v_stride);
  const std::string bf16 = a.ks.precision == Precision::bf16 ? "true" : "false";
  const std::string mma = "kf_mma16<" + bf16 + ">", pack = "kf_pack_half2<" + bf16 + ">";
  // The register of the 16-bit pair at element `at` of array `x` (an even index: 4-byte aligned).
  auto pair = [](const std::string& x, const std::string& at) { return "*reinterpret_cast<const unsigned*>(&" + x + "[" + at + "])"; };
  std::string b = a.opening();
  b += "  if (kend > 0) {\n" + a.stage_keys("0", "Ks", "Vs") + "  }\n";
  b += "  kf_copy_async_commit();  // Q's copies and the first key tile's\n";
  b += warp_state(t, tiles);
  b += "  for (i64 k0 = 0, it = 0; k0 < kend; k0 += " + KEYS + ", ++it) {\n";
  b += "    const unsigned short* Kc = Ks + (it & 1) * " + K_TILE + ";\n";
  b += "    const unsigned short* Vc = Vs + (it & 1) * " + V_TILE + ";\n";
  b += "    if (k0 + " + KEYS + " < kend) {\n";
  b += "      unsigned short* Kn = Ks + (~it & 1) * " + K_TILE + ";\n";
  b += "      unsigned short* Vn = Vs + (~it & 1) * " + V_TILE + ";\n";
  b += a.stage_keys("k0 + " + KEYS, "Kn", "Vn") + "    }\n";
  b += "    kf_copy_async_commit();\n";
  b += "    kf_copy_async_wait<1>();  // this tile's copies done (the next tile's may still run)\n";
  b += "    __syncthreads();  // and every thread's copies and stores of it seen\n";
  // Scores: keys / 8 tiles of 8 keys a row tile, from Q's and K's pairs along the head.
  b += zeroed_scores(t, tiles);
  b += "    for (int kk = 0; kk < " + std::to_string(t.head) + "; kk += 16) {\n      unsigned qa[" + MT + "][4];\n";
  b += "#pragma unroll\n      for (int mt = 0; mt < " + MT + "; ++mt) {\n        const int q = r0 + 16 * mt + g;\n";
  b += "        qa[mt][0] = " + pair("Qs", "q * " + QS + " + kk + 2 * t") + ";\n";
  b += "        qa[mt][1] = " + pair("Qs", "(q + 8) * " + QS + " + kk + 2 * t") + ";\n";
  b += "        qa[mt][2] = " + pair("Qs", "q * " + QS + " + kk + 2 * t + 8") + ";\n";
  b += "        qa[mt][3] = " + pair("Qs", "(q + 8) * " + QS + " + kk + 2 * t + 8") + ";\n      }\n";
  b += "#pragma unroll\n      for (int n = 0; n < " + NK + "; ++n) {\n";
  b += "        const unsigned kb[2] = {" + pair("Kc", "(8 * n + g) * " + QS + " + kk + 2 * t") + ", " +
       pair("Kc", "(8 * n + g) * " + QS + " + kk + 2 * t + 8") + "};\n";
  b += "#pragma unroll\n        for (int mt = 0; mt < " + MT + "; ++mt) " + mma + "(sc[mt][n], qa[mt], kb);\n      }\n    }\n";
  b += warp_softmax(a, tiles, "kf_exp_approx", "sc[mt][n][e] = p;  // the scores replaced by their probabilities");
  // The output: 16 keys a step, the probabilities' a fragment from two score tiles, V's b fragments by ldmatrix.
  // bf16: the probabilities as two parts (kf_split_half2), a second product for the small one.
  const bool split_p = a.ks.precision == Precision::bf16;
  // a's registers in order: rows g and g + 8 of keys 16 j + 2 t, + 1, then the same 8 keys on.
  const std::string pairs[4] = {"sc[mt][2 * j][0], sc[mt][2 * j][1]", "sc[mt][2 * j][2], sc[mt][2 * j][3]",
                                "sc[mt][2 * j + 1][0], sc[mt][2 * j + 1][1]", "sc[mt][2 * j + 1][2], sc[mt][2 * j + 1][3]"};
  b += "#pragma unroll\n    for (int j = 0; j < " + std::to_string(t.keys / 16) + "; ++j) {\n";
  b += "      unsigned pa[" + MT + "][4]" + (split_p ? ", ps[" + MT + "][4]" : "") + ";\n";
  b += "#pragma unroll\n      for (int mt = 0; mt < " + MT + "; ++mt) {\n";
  for (int i = 0; i < 4; ++i) {
    const std::string at = std::string("[mt][").append(std::to_string(i)).append("]");
    b += split_p ? "        kf_split_half2<true>(" + pairs[i] + ", pa" + at + ", ps" + at + ");\n"
                 : "        pa" + at + " = " + pack + "(" + pairs[i] + ");\n";
  }
  b += "      }\n#pragma unroll\n      for (int n = 0; n < " + NV + "; ++n) {\n        unsigned vb[2];\n";
  b += "        kf_ldmatrix_x2_trans(vb, &Vc[(16 * j + (lane & 15)) * " + VS + " + 8 * n]);\n";
  b += "#pragma unroll\n        for (int mt = 0; mt < " + MT + "; ++mt) {\n";
  if (split_p) b += "          " + mma + "(o[mt][n], ps[mt], vb);\n";
  b += "          " + mma + "(o[mt][n], pa[mt], vb);\n        }\n      }\n    }\n";
  b += "    __syncthreads();  // this tile's K and V read: the next iteration's copies overwrite them\n  }\n";
  b += warp_output(a, tiles);
  // Two blocks an SM where their shared memory fits and one tile a warp leaves the registers for it: one block's
  // copies and barriers overlap the other's products (a 128-dim head's 8 warps then take 128 registers a thread,
  // without spilling; two tiles a warp hold twice the accumulators).
  const bool two_blocks = tiles == 1 && 2 * t.smem_bytes() <= kMaxRowCache;
  return a.kernel(name, b, to_string(a.ks.precision) + " on the tensor cores", two_blocks ? 2 : 1);
}

}  // namespace

std::vector<PlanKernel> emit_attention(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  Attention a(cx, g, ks);
  if (ks.strategy != Strategy::mma) return {cuda_core_kernel(a, name)};
  return {a.t.half ? half_kernel(a, name) : tensor_core_kernel(a, name)};
}

}  // namespace kforge
