// Matrix products: a matmul group becomes one cuBLASLt step, not a generated kernel (or, under strategy mma,
// kforge's own tensor-core kernel: emit_matmul_mma.cpp). The plan describes the
// product as PyTorch sees it (row-major, C = A @ B); runtime/cublaslt_matmul.cpp maps it onto the library's
// column-major convention. The step's `library` block:
//   op "matmul"; m, n, k; batch (count; 1 for a plain product);
//   a, b: {"transposed": read the stored matrix transposed (a permute of its last two dims, not a copy),
//          "ld": row-major leading dim of the stored matrix, "batch_stride": elements between batch
//          matrices, 0 when one matrix serves the whole batch};
//   c: {"ld": n, "batch_stride": m * n}; in fp16 and fp16x3 with n % 4 != 0, a scratch buffer of rows padded
//      to 4 floats ({"ld": n rounded up to 4}) that a generated kernel then copies out (padded_result);
//   epilogue: none | bias | relu | bias_relu | gelu | bias_gelu (ir/matmul.h); precision: fp32 | tf32 |
//   fp16 | fp16x3; algo: index into cuBLASLt's heuristic answer; workspace_bytes;
//   accumulate (optional, default false): beta = 1, c += the product (a piece of a cut reduction, below).
// a, b and c may carry an "offset" (elements into the buffer: a triangular product's row blocks, a piece's
// share of the reduction).
// args: [a, b, c, bias (only with a bias epilogue), workspace]. In fp16 and fp16x3 a and b are 16-bit copies
// (operand "dtype" f16) that the group's first two kernels make (emit_matmul_split.cpp), k is the copies'
// reduction length, and an `alpha` buffer (alpha, beta: device pointers) comes before the workspace.
// check_library_step holds a plan read from JSON to this contract, so that a library call never reads or
// writes past its buffers.
#include <algorithm>

#include "codegen/emitters.h"
#include "ir/error.h"
#include "ir/half_operands.h"
#include "ir/matmul.h"

namespace kforge {

namespace {

// cuBLASLt's workspace: 32 MiB lets it pick split-K and stream-K algorithms for large K; H100/H200 guidance
// in the cuBLAS docs is at least 32 MiB. Steps run one after the other on one stream, so they share it.
constexpr int64_t kWorkspaceBytes = 32 << 20;
const char* kWorkspaceName = "cublaslt.workspace";

// The operand as the library reads it: the stored matrix, transposed or not, and its strides; with `direct`, the
// task's half-precision tensor under its cast (ir/half_operands.h), with its dtype.
nlohmann::json operand(const EmitContext& cx, int node, int64_t batch, bool direct, std::vector<int>& args) {
  const Graph& g = *cx.partition.graph;
  const auto [stored, transposed] = stored_operand(g, node, direct);
  const Shape& s = g.at(stored).type.shape;
  int64_t rows = s[s.size() - 2], cols = s.back();
  bool shared = numel(s) == rows * cols;  // batch dims all 1: one matrix for every batch entry
  args.push_back(buffer_of(cx, stored));
  nlohmann::json o = {{"transposed", transposed}, {"ld", cols}, {"batch_stride", shared || batch == 1 ? 0 : rows * cols}};
  if (direct) o["dtype"] = to_string(g.at(stored).type.dtype);
  return o;
}

// Elements between neighbours of an operand read as its rows x columns (A: m x k, B: k x n) along its columns
// (along_columns) or its rows: 1 or its leading dim, the other way round for a transposed one. A block or piece
// starting `i` rows or columns in starts i times this many elements into the buffer.
int64_t step_along(const nlohmann::json& o, bool along_columns) {
  return o.value("transposed", false) == along_columns ? o.at("ld").get<int64_t>() : int64_t(1);
}

// A product marked triangular (gemm_epilogue.h: only torch.triu / tril of it is read) as row blocks, each
// computing the columns that reach the triangle: rows [r0, r1) need columns [r0 + diagonal, n) (upper) or
// [0, r1 + diagonal) (lower), so 8 blocks do ~56% of the full product's work. Each block is `step` reading its
// operands and result at element offsets ("offset"; the runtime derives the pointers' alignment from them); r0
// and the first column are multiples of 8 (extra columns outside the triangle are harmless: the triangle op
// zeroes them). Plain products only: the result's last two dims are the library's m and n (no batch folded into
// m) and no bias epilogue (a bias vector would need its own offset).
std::vector<PlanKernel> triangle_blocks(const PlanKernel& step, const nlohmann::json& triangle, int64_t m, int64_t n) {
  constexpr int64_t kBlocks = 8, kMinRows = 256;  // a block of fewer rows is not worth its own call
  const int64_t blocks = std::clamp<int64_t>(m / kMinRows, 1, kBlocks);
  if (blocks == 1) return {step};
  const bool upper = triangle.at("upper");
  const int64_t diagonal = triangle.at("diagonal"), rows = (m + blocks - 1) / blocks / 8 * 8 + 8;
  const nlohmann::json &a = step.library.at("a"), &b = step.library.at("b"), &c = step.library.at("c");
  std::vector<PlanKernel> out;
  for (int64_t r0 = 0; r0 < m; r0 += rows) {
    const int64_t r1 = std::min(m, r0 + rows);
    const int64_t c0 = upper ? std::clamp<int64_t>(r0 + diagonal, 0, n) / 8 * 8 : 0;
    const int64_t c1 = upper ? n : std::clamp<int64_t>(r1 + diagonal, 0, n);
    if (c1 <= c0) continue;  // the block lies wholly outside the triangle
    PlanKernel k = step;
    k.name = step.name + "_rows" + std::to_string(r0);
    nlohmann::json& lib = k.library;
    lib["m"] = r1 - r0;
    lib["n"] = c1 - c0;
    lib["a"]["offset"] = r0 * step_along(a, false);
    lib["b"]["offset"] = c0 * step_along(b, true);
    lib["c"]["offset"] = r0 * c.at("ld").get<int64_t>() + c0;
    out.push_back(std::move(k));
  }
  return out;
}

// An fp16x3 product's reduction cut into at most `pieces` contiguous ranges of the copies' k (the tripled one: a
// piece may hold hi*hi terms of some k and hi*lo of others; the sum is the same), one cuBLASLt call each. Why: inside
// a tensor-core product every addend, the running sum included, is cut at the largest one's exponent
// (ir/tf32.h's model), so one accumulator over a long K loses low bits of each product to its own growing
// magnitude: 43 of 4M elements of a K = 32768 product, and a few of K = 3077 and 6144 ones, were measured
// outside even the widened strict tolerance. Each piece sums its range in a fresh accumulator; the first writes
// c (beta = 0), the others add theirs to it in fp32 in the library's epilogue (beta = 1, "accumulate"), and only
// the last applies the product's epilogue (bias and activation after the whole sum: D = act(alpha A B + beta C +
// bias)). A piece starts at a multiple of 8 elements (16-byte-aligned copies) and holds at least kMinPiece of
// the copies' k: each extra piece re-reads and rewrites c (8 bytes per element) for 2k FLOPs per element, which at
// the H200's ~600 TFLOP/s of fp16 against 3.5 TB/s costs more than its product below k ~ 700; so short
// reductions get fewer pieces than asked (one below 2 * kMinPiece).
constexpr int64_t kMinPiece = 512;

std::vector<PlanKernel> reduction_pieces(const PlanKernel& step, int pieces) {
  const nlohmann::json& lib = step.library;
  const int64_t k = lib.at("k"), piece = std::max(((k + pieces - 1) / pieces + 7) / 8 * 8, kMinPiece);
  const bool bias = has_bias(epilogue_from_string(lib.at("epilogue")));
  const int64_t step_a = step_along(lib.at("a"), true), step_b = step_along(lib.at("b"), false);  // one step along k
  std::vector<PlanKernel> out;
  for (int64_t k0 = 0; k0 < k; k0 += piece) {
    PlanKernel p = step;
    p.name = step.name + "_k" + std::to_string(k0);
    nlohmann::json& l = p.library;
    l["k"] = std::min(piece, k - k0);
    l["a"]["offset"] = lib.at("a").value("offset", int64_t(0)) + k0 * step_a;
    l["b"]["offset"] = lib.at("b").value("offset", int64_t(0)) + k0 * step_b;
    if (k0 > 0) l["accumulate"] = true;
    if (k0 + piece < k) {  // not the last piece: no epilogue yet, and so no bias buffer
      l["epilogue"] = to_string(Epilogue::none);
      if (bias) p.args.erase(p.args.begin() + 3);
    }
    out.push_back(std::move(p));
  }
  // Where k is short, pieces of at least kMinPiece are fewer than asked; two counts that give the same pieces
  // give the same steps, which the search's duplicate filter (plan_key: sources and library blocks) times once.
  return out;
}

// cuBLAS documents 16-byte alignment of pointers and leading dims for its tensor-core kernels (the cuBLAS guide's
// tensor-core usage section); a result of n floats with n % 4 != 0 leaves every row but the first misaligned.
// 07_irregular (n = 5003) in fp16x3 in 4 pieces took 3.55 ms where 01_square's, about as much work, took 0.86.
// Such a result is written to scratch rows padded to 4 floats, then copied out by one pass (`rows` rows of n
// floats). Only for the 16-bit copies' products: fp32's SIMT kernels need no alignment. What the padding gains is
// not measured yet (both fp16x3 candidates of 07_irregular missed the tier, so neither was timed).
PlanKernel padded_result(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, PlanKernel& step, int64_t rows,
                         int64_t n) {
  const auto I = i64_literal;
  const int64_t ld = (n + 3) / 4 * 4;
  const int padded = add_temp(cx, g.key + ".c_padded", DType::f32, {rows * ld});
  const int result = step.args[2];
  step.args[2] = padded;
  nlohmann::json& c = step.library["c"];
  c["ld"] = ld;
  if (c.at("batch_stride").get<int64_t>() != 0) c["batch_stride"] = step.library.at("m").get<int64_t>() * ld;
  const std::string name = step.name + "_compact";
  std::string s = "// kforge kernel " + name + ": the result of product group '" + g.key + "', " + I(rows) +
                  " rows of " + I(n) + " floats, out of its rows padded to " + I(ld) + "\n";
  s += "extern \"C\" __global__ void __launch_bounds__(256) " + name +
       "(const float* __restrict__ padded, float* __restrict__ c) {\n";
  s += "  for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < " + I(rows * n) + "; i += (i64)gridDim.x * 256)\n";
  s += "    c[i] = padded[i / " + I(n) + " * " + I(ld) + " + i % " + I(n) + "];\n}\n";
  return generated_kernel(g, ks, name, s, {padded, result}, full_grid((rows * n + 255) / 256), 256);
}

}  // namespace

std::vector<PlanKernel> emit_matmul(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& graph = *cx.partition.graph;
  const Node& mm = graph.at(g.anchor);
  const Shape &as = graph.at(mm.args[0]).type.shape, &bs = graph.at(mm.args[1]).type.shape;
  MatmulDims d = matmul_dims(as, bs, "node '" + mm.name + "': ");
  int64_t batch = numel(d.batch);
  Epilogue e = epilogue_from_string(mm.attrs.value("epilogue", "none"));
  PlanKernel k;
  k.name = name;
  k.group = g.key;
  k.kind = StepKind::cublaslt;
  k.grid = 0;  // no launch of its own: the library chooses its kernels and geometry
  k.block = 0;
  const bool direct = g.half_operands.has_value();  // no copies: the library reads the half-precision tensors
  nlohmann::json a = operand(cx, mm.args[0], batch, direct, k.args), b = operand(cx, mm.args[1], batch, direct, k.args);
  k.args.push_back(buffer_of(cx, g.anchor));
  if (has_bias(e)) k.args.push_back(buffer_of(cx, mm.args[2]));
  if (ks.strategy == Strategy::mma) return emit_matmul_mma(cx, g, ks, name, d, a, b, e, k.args);
  k.args.push_back(library_workspace(cx, kWorkspaceName, kWorkspaceBytes));
  k.library = {{"op", "matmul"}, {"m", d.m}, {"n", d.n}, {"k", d.k}, {"batch", batch}, {"a", a}, {"b", b},
               {"c", {{"ld", d.n}, {"batch_stride", batch == 1 ? 0 : d.m * d.n}}}, {"epilogue", to_string(e)},
               {"precision", to_string(ks.precision)}, {"algo", ks.algo}, {"workspace_bytes", kWorkspaceBytes}};
  if (direct) k.library["direct"] = true;
  // A result kept in the task's dtype (codegen/half_results.h): the library writes 16 bits, its bias is 16-bit too.
  const DType result_dtype = graph.at(g.anchor).type.dtype;
  if (is_half(result_dtype)) k.library["c"]["dtype"] = to_string(result_dtype);
  k.schedule = {{"strategy", to_string(ks.strategy)}, {"precision", to_string(ks.precision)}, {"algo", ks.algo}};
  if (ks.chunks > 1) k.schedule["chunks"] = ks.chunks;
  std::vector<PlanKernel> steps = {k};
  std::vector<PlanKernel> after;  // steps after the library's: the padded result's copy out
  if (reads_half_copies(ks.precision) || direct) {
    if (!direct) steps = emit_matmul_split(cx, g, ks, k, d, batch);
    // Not under a triangle mask: its row blocks leave the rest of the result unwritten, and the copy would carry
    // whatever the scratch held into the masked part.
    if (d.n % 4 != 0 && !mm.attrs.contains("triangle") && !is_half(result_dtype)) after.push_back(padded_result(cx, g, ks, steps.back(), batch * d.m, d.n));
  }
  const Shape& result = graph.at(g.anchor).type.shape;
  const bool plain = result.size() >= 2 && result[result.size() - 2] == d.m && result.back() == d.n;
  if (mm.attrs.contains("triangle") && plain && !has_bias(e)) {
    std::vector<PlanKernel> blocks = triangle_blocks(steps.back(), mm.attrs.at("triangle"), d.m, d.n);
    steps.pop_back();
    steps.insert(steps.end(), blocks.begin(), blocks.end());
  }
  if (ks.chunks > 1) {  // every library step (each triangle block) in pieces; the copies' kernels come first
    std::vector<PlanKernel> cut;
    for (const PlanKernel& s : steps) {
      if (s.kind != StepKind::cublaslt) {
        cut.push_back(s);
        continue;
      }
      for (PlanKernel& p : reduction_pieces(s, ks.chunks)) cut.push_back(std::move(p));
    }
    steps = std::move(cut);
  }
  steps.insert(steps.end(), after.begin(), after.end());
  return steps;
}

namespace {
// Elements a strided batch of row-major matrices spans from its buffer's start (its offset included), read as
// rows x cols (transposed: stored cols x rows).
int64_t extent(const nlohmann::json& m, int64_t rows, int64_t cols, int64_t batch, const std::string& what) {
  bool t = m.value("transposed", false);
  int64_t stored_rows = t ? cols : rows, stored_cols = t ? rows : cols;
  int64_t ld = m.at("ld").get<int64_t>(), stride = m.at("batch_stride").get<int64_t>(), offset = m.value("offset", int64_t(0));
  if (ld < stored_cols || stride < 0 || offset < 0)
    throw UserError(what + ": leading dim " + std::to_string(ld) + " below its " + std::to_string(stored_cols) +
                    " columns, or a negative batch stride or offset");
  constexpr int64_t kLimit = int64_t(1) << 40;  // every term below stays far from int64's overflow
  if (ld > kLimit || stride > kLimit || offset > kLimit || rows > kLimit || cols > kLimit || batch > kLimit)
    throw UserError(what + ": a dimension, stride or offset beyond 2^40 elements");
  return offset + stride * (batch - 1) + (stored_rows - 1) * ld + stored_cols;
}
}  // namespace

void check_matmul_step(const PlanKernel& k, const std::vector<PlanBuffer>& buffers) {
  const std::string where = "plan: library step '" + k.name + "'";
  try {
    const auto& lib = k.library;
    int64_t m = lib.at("m"), n = lib.at("n"), kk = lib.at("k"), batch = lib.at("batch");
    if (m < 1 || n < 1 || kk < 1 || batch < 1) throw UserError(where + ": m, n, k and batch must be at least 1");
    bool bias = has_bias(epilogue_from_string(lib.at("epilogue")));
    const Precision p = precision_from_string(lib.at("precision"));
    const bool direct = lib.value("direct", false);  // the task's half-precision tensors, read as stored
    if (p == Precision::tf32x3 || (p == Precision::bf16 && !direct))
      throw UserError(where + ": precision " + to_string(p) + " is not a cuBLASLt product's (fp32, tf32, fp16, fp16x3; bf16 direct)");
    if (direct && !is_half(p)) throw UserError(where + ": a direct product reads f16 or bf16 tensors: precision fp16 or bf16");
    const bool copies = reads_half_copies(p) && !direct;
    const DType t = direct ? (p == Precision::bf16 ? DType::bf16 : DType::f16) : copies ? DType::f16 : DType::f32;
    for (const char* o : {"a", "b"})
      if (lib.at(o).value("dtype", "f32") != to_string(t))
        throw UserError(where + ": operand " + o + " must be " + to_string(t) + " in precision " + to_string(p) +
                        (direct ? " (direct)" : ""));
    // The result is f32, or a direct product's 16-bit dtype (codegen/half_results.h); a bias is the result's type.
    const DType c = dtype_from_string(lib.at("c").value("dtype", "f32"));
    if (c != DType::f32 && !(direct && c == t))
      throw UserError(where + ": result c must be f32" + (direct ? " or " + to_string(t) : std::string()));
    std::vector<StepOperand> need = {
        {"a", extent(lib.at("a"), m, kk, batch, where + " operand a"), t},
        {"b", extent(lib.at("b"), kk, n, batch, where + " operand b"), t},
        {"c", extent(lib.at("c"), m, n, batch, where + " result c"), c}};
    if (bias) need.push_back({"bias", n, c});
    const bool accumulate = lib.value("accumulate", false);
    if (copies) need.push_back({"alpha", accumulate ? 3 : 2});  // alpha, beta 0 and beta 1
    const int64_t workspace = lib.at("workspace_bytes").get<int64_t>();
    if (workspace < 0 || workspace > (int64_t(1) << 32)) throw UserError(where + ": workspace_bytes must be in [0, 4 GiB]");
    need.push_back({"workspace", (workspace + 3) / 4});
    check_step_buffers(k, buffers, need, where);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(where + ": malformed parameters: " + e.what());
  }
}

}  // namespace kforge
