// Convolutions: a conv group becomes one cuDNN step (runtime/cudnn_conv.cpp builds the backend graph: one
// CONVOLUTION_FORWARD operation, engines from the heuristic, an execution plan), not a generated kernel.
// The bias was split off by decompose (ir/conv.h) and runs in the pointwise kernel that reads the result, or,
// where nothing elementwise reads the sum (codegen/conv_epilogue.h folded it back, the node's third argument, with
// an activation after it in attrs.activation), in the step that writes the result: the channels-last transpose
// back, an in-place pass after an NCHW call, or (schedule library_epilogue) cuDNN's own graph.
// The step's `library` block:
//   op "conv"; layout "NCHW" (contiguous [N, C, *spatial] tensors; the name stands for 1-3 spatial dims) or
//   "NHWC" (channels last: [N, *spatial, C] in memory, the weight [O, *kernel, C / groups]; the plan transposes
//   into and out of such copies around the step: schedule layout nhwc);
//   n, c, o, groups; in, kernel, out: spatial extents; stride, padding (symmetric), dilation: per spatial dim;
//   precision: fp32 (engines without tensor-core or reduced-precision notes) | tf32 (tensor-core engines first,
//   then the fp32 ones; engines that down-convert their inputs are never used: runtime/cudnn_conv.cpp) |
//   fp16, bf16 (layout NHWC only: x, w and y are 16-bit buffers, the sums fp32; tensor-core engines first) |
//   fp16x3 (layout NHWC only: x and w hold scaled fp16 parts that triple the channels the sum runs over, c for a
//   forward step and o for a transposed one, so the block's c or o is three times the graph's; y is fp32; made
//   and undone by emit_conv_split.cpp's kernels; tensor-core engines without reduced-precision sums first);
//   algo: index into that list, clamped at load;
//   workspace_bytes: the cap; an engine needing more is skipped at load;
//   epilogue (optional; schedule library_epilogue): {"bias": bool, "scale": bool, "activation": {"op", "attrs"}}:
//   pointwise operations cuDNN's graph applies before it writes y (in the step's layout): a product with
//   scale[0] (fp16x3's undo factor, only there), a sum with bias[channel], the activation.
// args: [x, w, y, workspace, then bias and scale where the epilogue has them]. check_conv_step holds a plan read
// from JSON to this contract.
// A transposed convolution is op "conv_transpose" with the geometry of the forward convolution whose input
// gradient it is (ir/conv.h): its x has the shape of that convolution's output [n, o, *out], its y the shape of
// that convolution's input [n, c, *in]; cuDNN runs it as CONVOLUTION_BACKWARD_DATA.
#include <algorithm>

#include "codegen/conv_epilogue.h"
#include "codegen/emitters.h"
#include "ir/conv.h"
#include "ir/error.h"
#include "ir/half_operands.h"

namespace kforge {

namespace {
// cuDNN's forward engines for fp32 need little workspace (implicit GEMM: none; FFT and Winograd variants: up
// to a few tens of MB at these sizes); the cap is checked per engine at load.
constexpr int64_t kWorkspaceBytes = 64 << 20;
const char* kWorkspaceName = "cudnn.workspace";

// How a transpose's side stores its elements: float, or the 16-bit copies of a half-precision step, with the
// prelude's conversions (kf_to_f16 and kf_from_f16, or the bf16 pair).
struct Element {
  std::string type = "float", to = "", from = "";  // C type; float -> type and type -> float (empty: none)
};
Element element_of(Precision p) {
  if (p == Precision::fp16) return {"unsigned short", "kf_to_f16", "kf_from_f16"};
  if (p == Precision::bf16) return {"unsigned short", "kf_to_bf16", "kf_from_bf16"};
  return {};
}
// The plan dtypes of a cuDNN step's x and w (its inputs) and y under precision p: the 16-bit copies of fp16 and
// bf16; fp16x3's fp16 parts with an fp32 result; else f32.
DType input_dtype(Precision p) { return p == Precision::bf16 ? DType::bf16 : is_half(p) || p == Precision::fp16x3 ? DType::f16 : DType::f32; }
DType result_dtype(Precision p) { return p == Precision::bf16 ? DType::bf16 : is_half(p) ? DType::f16 : DType::f32; }

}  // namespace

std::string ConvEpilogue::store(const std::string& lhs, const std::string& value, const std::string& channel,
                                const std::string& to) const {
  const std::string sum = value + (bias >= 0 ? " + bias[" + channel + "]" : "");
  if (!activation) return lhs + " = " + to + "(" + sum + ");\n";
  // The activation names its argument more than once: a local holds it.
  const size_t indent = lhs.find_first_not_of(' ');
  return lhs.substr(0, indent) + "{ const float r = " + sum + "; " + lhs.substr(indent) + " = " + to + "(" +
         unary_expression(*activation, "r") + "); }\n";
}

ConvEpilogue conv_epilogue(const EmitContext& cx, const Node& conv) {
  return {conv.args.size() > 2 ? buffer_of(cx, conv.args[2]) : -1, conv_activation(conv)};
}

std::string tiled_transpose(int64_t A, int64_t B, int64_t C, const std::string& load, const std::string& store,
                            const std::string& fetch) {
  const auto I = i64_literal;
  if (C == 1) {  // nothing to transpose (a channels-last tensor into its copies): an element a thread, in order
    std::string s = "  for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < " + I(A * B) + "; i += (i64)gridDim.x * 256) {\n";
    s += "    const i64 a = i / " + I(B) + ", b = i % " + I(B) + ", c = 0;\n    (void)c;\n";
    s += (fetch.empty() ? "    const auto v = src[i];\n" : fetch) + "    {\n        const float x = " + load + ";\n" + store + "    }\n  }\n";
    return s;
  }
  const int64_t tiles_b = (B + 31) / 32, tiles_c = (C + 31) / 32;
  std::string s = "  __shared__ float tile[32][33];  // one column of padding: the transposed read is conflict-free\n";
  s += "  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;\n";
  s += "  for (i64 t = blockIdx.x; t < " + I(A * tiles_b * tiles_c) + "; t += gridDim.x) {\n";
  s += "    const i64 a = t / " + I(tiles_b * tiles_c) + ", ob = t / " + I(tiles_c) + " % " + I(tiles_b) +
       " * 32, oc = t % " + I(tiles_c) + " * 32;\n";
  s += "    for (int i = ty; i < 32; i += 8)\n";
  s += "      if (ob + i < " + I(B) + " && oc + tx < " + I(C) + ") {\n";
  s += "        const i64 b = ob + i, c = oc + tx;\n";
  s += fetch.empty() ? "        const auto v = src[a * " + I(B * C) + " + b * " + I(C) + " + c];\n" : fetch;
  s += "        tile[i][tx] = " + load + ";\n      }\n";
  s += "    __syncthreads();\n";
  s += "    for (int i = ty; i < 32; i += 8)\n";
  s += "      if (oc + i < " + I(C) + " && ob + tx < " + I(B) + ") {\n";
  s += "        const i64 b = ob + tx, c = oc + i;\n";
  s += "        const float x = tile[tx][i];\n";
  s += store;
  s += "      }\n";
  s += "    __syncthreads();  // the tile is read before the next one overwrites it\n  }\n";
  return s;
}

int64_t tiled_transpose_blocks(int64_t A, int64_t B, int64_t C) {
  return C == 1 ? (A * B + 255) / 256 : A * ((B + 31) / 32) * ((C + 31) / 32);
}

namespace {

// A plan step that writes dst[a][c][b] = src[a][b][c] (a < A, b < B, c < C) through tiled_transpose. NCHW <-> NHWC
// is this with B = channels, C = the spatial extent (or the reverse), A = the batch. With an epilogue (its bias one
// value per c) it writes it applied to src: the NHWC result's way back adds the convolution's bias and activation
// on the way; with an `undo` buffer it first multiplies by undo[0] (fp16x3's scales). `in` and `out` are the two
// sides' element types: the way into a half-precision step rounds, the way back widens. `channel` names the index
// (b or c) the epilogue's bias is read at: c for the NHWC result's way back to NCHW, b where C = 1 (a channels-last
// result copied, [rows][channels][1]).
PlanKernel transpose_step(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, int src, int dst,
                          int64_t A, int64_t B, int64_t C, const ConvEpilogue& e = {}, const Element& in = {},
                          const Element& out = {}, int undo = -1, const std::string& channel = "c") {
  const auto I = i64_literal;
  std::string s = "// kforge kernel " + name + ": channels-last transpose for conv group '" + g.key + "', [" +
                  std::to_string(A) + "][" + std::to_string(B) + "][" + std::to_string(C) + "] -> [a][c][b]\n";
  s += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(const " + in.type + "* __restrict__ src, " +
       (e.bias >= 0 ? "const float* __restrict__ bias, " : "") + (undo >= 0 ? "const float* __restrict__ undo, " : "") + out.type +
       "* __restrict__ dst) {\n";
  if (undo >= 0) s += "  const float scale = undo[0];  // 2^-(ex + ew): the split copies' scales, undone exactly\n";
  s += tiled_transpose(A, B, C, in.from + "(v)",
                       e.store("        dst[a * " + I(B * C) + " + c * " + I(B) + " + b]", undo >= 0 ? "x * scale" : "x", channel, out.to));
  s += "}\n";
  std::vector<int> args = {src};
  if (e.bias >= 0) args.push_back(e.bias);
  if (undo >= 0) args.push_back(undo);
  args.push_back(dst);
  return generated_kernel(g, ks, name, s, args, clamp_grid(g, tiled_transpose_blocks(A, B, C)), 256);
}

// A plan step that applies the epilogue (bias[c], then the activation) to y[a][c][s] in place (c < C, s < S): that
// of an NCHW library call whose result nothing else reads, or of a channels-last one writing the graph's fp16
// tensor (`element`: its 16-bit storage). One element a thread, a block per 256 of them (as emit_pointwise's grid).
PlanKernel epilogue_step(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, int y,
                         const ConvEpilogue& e, int64_t A, int64_t C, int64_t S, const Element& element = {}) {
  const auto I = i64_literal;
  std::string s = "// kforge kernel " + name + ": the epilogue of conv group '" + g.key + "', in place over [" +
                  std::to_string(A) + "][" + std::to_string(C) + "][" + std::to_string(S) + "]\n";
  s += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(" +
       (e.bias >= 0 ? "const float* __restrict__ bias, " : "") + element.type + "* __restrict__ y) {\n";
  const int64_t n = A * C * S;
  std::vector<int> args = {y};
  if (e.bias >= 0) args.insert(args.begin(), e.bias);
  if (!element.from.empty() && n % 4 == 0) {
    // 16-bit values four a thread, one 8-byte load and store: one 2-byte access a thread ran at a third of the copy
    // bandwidth (89 µs for 114 MB on an H100).
    s += "  for (i64 q = (i64)blockIdx.x * 256 + threadIdx.x; q < " + I(n / 4) + "; q += (i64)gridDim.x * 256) {\n";
    s += "    uint2 p = reinterpret_cast<const uint2*>(y)[q];\n";
    s += "    unsigned short h[4] = {(unsigned short)(p.x & 0xffffu), (unsigned short)(p.x >> 16), (unsigned short)(p.y & 0xffffu),"
         " (unsigned short)(p.y >> 16)};\n";
    s += "    for (int j = 0; j < 4; ++j) {\n      const i64 i = q * 4 + j;\n";
    s += e.store("      h[j]", element.from + "(h[j])", "i / " + I(S) + " % " + I(C), element.to) + "    }\n";
    s += "    p.x = (unsigned)h[0] | ((unsigned)h[1] << 16);\n    p.y = (unsigned)h[2] | ((unsigned)h[3] << 16);\n";
    s += "    reinterpret_cast<uint2*>(y)[q] = p;\n  }\n}\n";
    return generated_kernel(g, ks, name, s, args, full_grid((n / 4 + 255) / 256), 256);
  }
  s += "  for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < " + I(n) + "; i += (i64)gridDim.x * 256) {\n";
  s += e.store("    y[i]", element.from + "(y[i])", "i / " + I(S) + " % " + I(C), element.to) + "  }\n}\n";
  return generated_kernel(g, ks, name, s, args, full_grid((n + 255) / 256), 256);
}

// The extents of a channels-last step: its x is [n, xc, x_extent], its y [n, yc, y_extent] (a transposed
// convolution's x is its forward convolution's output), its weight [o, wc, taps]; and its copies' geometry as
// tiled_transpose's [A][B][C]: a transpose where the graph's tensors are NCHW, a copy ([rows][channels][1]) where
// they are channels-last already (KernelGroup::channels_last: the copies only change the element type or split it
// into fp16x3's parts).
struct ChannelsLast {
  bool transposed = false, in_graph = false;
  int64_t n = 1, o = 1, xc = 0, yc = 0, x_extent = 0, y_extent = 0, wc = 0, taps = 0;
  struct Extents {
    int64_t a, b, c;
  };
  Extents x_in() const { return in_graph ? Extents{n * x_extent, xc, 1} : Extents{n, xc, x_extent}; }
  Extents w_in() const { return in_graph ? Extents{o * taps, wc, 1} : Extents{o, wc, taps}; }
  // The result's way back: [n][y_extent][yc] to NCHW, or a copy whose channel is the index b.
  Extents y_back() const { return in_graph ? Extents{n * y_extent, yc, 1} : Extents{n, y_extent, yc}; }
  std::string y_channel() const { return in_graph ? "b" : "c"; }
};
ChannelsLast channels_last(const ConvDims& d, bool transposed, bool in_graph) {
  const bool t = transposed;
  return {t, in_graph, d.n, d.o, t ? d.o : d.c, t ? d.c : d.o, numel(t ? d.out : d.in), numel(t ? d.in : d.out), d.c / d.groups, numel(d.kernel)};
}

// The step's library block and buffers for an epilogue cuDNN applies (schedule library_epilogue): which pointwise
// operations its graph adds after the convolution (fp16x3's scale, the bias, the activation) and their buffers
// after the workspace (bias, then scale).
void library_epilogue(PlanKernel& k, const ConvEpilogue& e, int scale) {
  nlohmann::json epilogue = {{"bias", e.bias >= 0}, {"scale", scale >= 0}};
  if (e.activation) epilogue["activation"] = {{"op", e.activation->op}, {"attrs", e.activation->attrs}};
  k.library["epilogue"] = epilogue;
  if (e.bias >= 0) k.args.push_back(e.bias);
  if (scale >= 0) k.args.push_back(scale);
}

// The channels-last steps of a convolution in fp16x3 (emit_conv_split.cpp): both operands' largest magnitudes,
// their scaled fp16 parts tripling the reduction's channels (a forward convolution's input channels, a transposed
// one's output channels: the library block's c or o becomes three times as many, in the same groups), the cuDNN
// step (fp16 x and w, fp32 y), and the transpose back undoing the scales and applying the epilogue, or under
// library_epilogue only transposing what cuDNN's graph scaled and applied them to.
std::vector<PlanKernel> split_step(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, PlanKernel k,
                                   const ConvDims& d, const ChannelsLast& cl, int x, int w, int y, const ConvEpilogue& e) {
  const std::string& name = k.name;
  const bool t = cl.transposed;
  const int64_t xc = cl.xc, yc = cl.yc, x_extent = cl.x_extent, y_extent = cl.y_extent, wc = cl.wc, taps = cl.taps;
  const int64_t x_elems = d.n * xc * x_extent, w_elems = d.o * wc * taps;
  // A grid of up to 8 blocks an SM folds the partials in each block: 256 of them per operand keep that a few MB of L2.
  const HalfScales h = emit_half_absmax(cx, g, ks, name, x, x_elems, w, w_elems, 256);
  k.args[0] = add_temp(cx, g.key + ".x_nhwc", DType::f16, {3 * x_elems});
  k.args[1] = add_temp(cx, g.key + ".w_nhwc", DType::f16, {3 * w_elems});
  const int undo = add_temp(cx, g.key + ".undo", DType::f32, {1});
  k.library[t ? "o" : "c"] = 3 * (t ? d.o : d.c);
  const std::vector<std::string> x_parts = {"hi", "hi", "lo"}, w_parts = {"hi", "lo", "hi"};
  const ChannelsLast::Extents xe = cl.x_in(), we = cl.w_in(), ye = cl.y_back();
  std::vector<PlanKernel> steps = {
      h.absmax,
      emit_split_transpose(g, ks, name + "_x_nhwc", x, k.args[0], h, "ea", xe.a, xe.b, xe.c, xc / d.groups, false, x_parts, undo),
      t ? emit_split_transpose(g, ks, name + "_w_nhwc", w, k.args[1], h, "eb", d.o, wc, taps, d.o / d.groups, true, w_parts)
        : emit_split_transpose(g, ks, name + "_w_nhwc", w, k.args[1], h, "eb", we.a, we.b, we.c, wc, false, w_parts)};
  k.args[2] = add_temp(cx, g.key + ".y_nhwc", DType::f32, {d.n * yc * y_extent});
  if (ks.library_epilogue) library_epilogue(k, e, undo);
  steps.push_back(k);
  steps.push_back(transpose_step(g, ks, name + "_y_nchw", k.args[2], y, ye.a, ye.b, ye.c, ks.library_epilogue ? ConvEpilogue{} : e,
                                 {}, {}, ks.library_epilogue ? -1 : undo, cl.y_channel()));
  return steps;
}

nlohmann::json conv_attrs(const nlohmann::json& lib) {
  return {{"stride", lib.at("stride")}, {"padding", lib.at("padding")}, {"dilation", lib.at("dilation")},
          {"groups", lib.at("groups")}};
}
}  // namespace

std::vector<PlanKernel> emit_conv(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& graph = *cx.partition.graph;
  const Node& cv = graph.at(g.anchor);
  // A bias and activation here are conv_epilogue.h's fold, applied by the step writing the result.
  const ConvEpilogue e = conv_epilogue(cx, cv);
  if (ks.strategy == Strategy::tile)
    return {emit_conv_direct(g, ks, name, buffer_of(cx, cv.args[0]), buffer_of(cx, cv.args[1]), buffer_of(cx, g.anchor), e)};
  const Shape &xs = graph.at(cv.args[0]).type.shape, &ws = graph.at(cv.args[1]).type.shape;
  const std::string where = "node '" + cv.name + "': ";
  // A transposed convolution is described by the forward convolution it is the input gradient of.
  ConvDims d = cv.op == "conv" ? conv_dims(xs, ws, cv.attrs, where) : conv_transpose_dims(xs, ws, cv.attrs, where).forward;
  PlanKernel k;
  k.name = name;
  k.group = g.key;
  k.kind = StepKind::cudnn;
  k.grid = 0;  // the library chooses its kernels and geometry
  k.block = 0;
  // A half-precision task's own input and weight are read as stored (ir/half_operands.h): their casts have no memory.
  const std::optional<HalfOperands> direct = g.half_operands ? half_operands(graph, g.anchor) : std::nullopt;
  k.args = {buffer_of(cx, direct ? direct->a : cv.args[0]), buffer_of(cx, direct ? direct->b : cv.args[1]),
            buffer_of(cx, g.anchor), library_workspace(cx, kWorkspaceName, kWorkspaceBytes)};
  const bool nhwc = ks.layout == Layout::nhwc;
  k.library = {{"op", cv.op}, {"layout", nhwc ? "NHWC" : "NCHW"}, {"n", d.n}, {"c", d.c}, {"o", d.o}, {"groups", d.groups},
               {"in", d.in}, {"kernel", d.kernel}, {"out", d.out}, {"stride", d.stride}, {"padding", d.padding},
               {"dilation", d.dilation}, {"precision", to_string(ks.precision)}, {"algo", ks.algo},
               {"workspace_bytes", kWorkspaceBytes}};
  k.schedule = {{"strategy", to_string(ks.strategy)}, {"precision", to_string(ks.precision)}, {"algo", ks.algo},
                {"layout", to_string(ks.layout)}};
  if (ks.library_epilogue) k.schedule["epilogue"] = "library";
  const Shape& result = graph.at(g.anchor).type.shape;
  if (!nhwc) {
    if (ks.library_epilogue) library_epilogue(k, e, -1);
    if (e.empty() || ks.library_epilogue) return {k};
    return {k, epilogue_step(g, ks, name + "_epilogue", k.args[2], e, result[0], result[1], numel(result) / (result[0] * result[1]))};
  }
  // Channels last: the step reads and writes channels-last copies; its input and weight are transposed into
  // them first and its result back after.
  const ChannelsLast cl = channels_last(d, cv.op == "conv_transpose", g.channels_last);
  const int x = k.args[0], w = k.args[1], y = k.args[2];
  if (cl.in_graph && direct) {
    // The graph's own 16-bit channels-last tensors (codegen/half_activations.h): the step reads them and writes its
    // result as they are, the epilogue in cuDNN's graph or in place; a result kept f32 (a graph output) is widened
    // from a 16-bit copy on the way.
    if (ks.library_epilogue) library_epilogue(k, e, -1);
    const Element half = element_of(ks.precision);
    if (is_half(graph.at(g.anchor).type.dtype)) {
      if (e.empty() || ks.library_epilogue) return {k};
      return {k, epilogue_step(g, ks, name + "_epilogue", y, e, d.n * cl.y_extent, cl.yc, 1, half)};
    }
    k.args[2] = add_temp(cx, g.key + ".y_nhwc", result_dtype(ks.precision), {d.n * cl.yc * cl.y_extent});
    const ChannelsLast::Extents ye = cl.y_back();
    return {k, transpose_step(g, ks, name + "_y_nchw", k.args[2], y, ye.a, ye.b, ye.c, ks.library_epilogue ? ConvEpilogue{} : e,
                              half, {}, -1, cl.y_channel())};
  }
  if (ks.precision == Precision::fp16x3) return split_step(cx, g, ks, k, d, cl, x, w, y, e);
  // Tensors channels-last in the graph, read in fp32 or TF32 as they are: the step alone, and the epilogue.
  if (cl.in_graph && !is_half(ks.precision)) {
    if (ks.library_epilogue) library_epilogue(k, e, -1);
    if (e.empty() || ks.library_epilogue) return {k};
    return {k, epilogue_step(g, ks, name + "_epilogue", y, e, d.n * cl.y_extent, cl.yc, 1)};
  }
  const int64_t xc = cl.xc, yc = cl.yc, x_extent = cl.x_extent, y_extent = cl.y_extent, wc = cl.wc, taps = cl.taps;
  // In fp16 or bf16 the copies are 16-bit: the transposes in round, the one out widens (and adds the bias).
  const Element full, copy = element_of(ks.precision);
  const Element source = direct ? Element{"unsigned short", "", copy.from} : full;  // what the transposes in read
  k.args[0] = add_temp(cx, g.key + ".x_nhwc", input_dtype(ks.precision), {d.n * xc * x_extent});
  k.args[1] = add_temp(cx, g.key + ".w_nhwc", input_dtype(ks.precision), {d.o * wc * taps});
  const ChannelsLast::Extents xe = cl.x_in(), we = cl.w_in(), ye = cl.y_back();
  std::vector<PlanKernel> steps = {transpose_step(g, ks, name + "_x_nhwc", x, k.args[0], xe.a, xe.b, xe.c, {}, source, copy),
                                   transpose_step(g, ks, name + "_w_nhwc", w, k.args[1], we.a, we.b, we.c, {}, source, copy)};
  k.args[2] = add_temp(cx, g.key + ".y_nhwc", result_dtype(ks.precision), {d.n * yc * y_extent});
  if (ks.library_epilogue) library_epilogue(k, e, -1);
  steps.push_back(k);
  // The way back widens to f32, or keeps 16 bits where the result is kept in the task's dtype (half_results.h).
  const Element back = is_half(graph.at(g.anchor).type.dtype) ? copy : full;
  steps.push_back(transpose_step(g, ks, name + "_y_nchw", k.args[2], y, ye.a, ye.b, ye.c, ks.library_epilogue ? ConvEpilogue{} : e,
                                 copy, back, -1, cl.y_channel()));
  return steps;
}

ConvDims conv_step_dims(const nlohmann::json& lib, const std::string& where) {
  Shape x = {lib.at("n").get<int64_t>(), lib.at("c").get<int64_t>()}, w = {lib.at("o").get<int64_t>()};
  int64_t groups = lib.at("groups");
  if (groups < 1) throw UserError(where + ": groups must be at least 1");
  w.push_back(x[1] / groups);
  for (int64_t v : lib.at("in").get<std::vector<int64_t>>()) x.push_back(v);
  for (int64_t v : lib.at("kernel").get<std::vector<int64_t>>()) w.push_back(v);
  ConvDims d = conv_dims(x, w, conv_attrs(lib), where + ": ");
  if (d.out != lib.at("out").get<Shape>()) throw UserError(where + ": out " + lib.at("out").dump() + " disagrees with the geometry " + to_string(d.out));
  std::string layout = lib.value("layout", "");
  if (layout != "NCHW" && layout != "NHWC") throw UserError(where + ": layout must be NCHW or NHWC");
  return d;
}

void check_conv_step(const PlanKernel& k, const std::vector<PlanBuffer>& buffers) {
  const std::string where = "plan: library step '" + k.name + "'";
  try {
    const auto& lib = k.library;
    ConvDims d = conv_step_dims(lib, where);
    const Precision p = precision_from_string(lib.at("precision"));
    if (p == Precision::tf32x3) throw UserError(where + ": precision tf32x3 is for matrix products only");
    if ((is_half(p) || p == Precision::fp16x3) && lib.at("layout") != "NHWC")
      throw UserError(where + ": precision " + to_string(p) + " needs layout NHWC");
    if (lib.at("algo").get<int>() < 0) throw UserError(where + ": algo must be at least 0");
    int64_t x = d.n * d.c * numel(d.in), w = d.o * (d.c / d.groups) * numel(d.kernel), y = numel(d.result);
    if (lib.at("op") == "conv_transpose") std::swap(x, y);  // it reads the forward's output, writes its input
    if (std::min({d.n, d.c, d.o}) < 1) throw UserError(where + ": n, c and o must be at least 1");
    const nlohmann::json epilogue = lib.value("epilogue", nlohmann::json());
    // Under an epilogue cuDNN applies, its bias and scale buffers follow the workspace.
    const DType in = input_dtype(p), out = result_dtype(p);
    std::vector<StepOperand> expected = {{"x", x, in}, {"w", w, in}, {"y", y, out},
                                        {"workspace", (lib.at("workspace_bytes").get<int64_t>() + 3) / 4}};
    if (!epilogue.is_null()) {
      if (epilogue.value("scale", false) != (p == Precision::fp16x3))
        throw UserError(where + ": epilogue.scale is fp16x3's (the factor undoing its parts' scales), and only its");
      if (epilogue.value("bias", false)) expected.push_back({"bias", lib.at("op") == "conv_transpose" ? d.c : d.o, DType::f32});
      if (epilogue.value("scale", false)) expected.push_back({"scale", 1, DType::f32});
      if (epilogue.contains("activation") && !is_conv_activation(activation_node(epilogue.at("activation"), {DType::f32, {}})))
        throw UserError(where + ": epilogue.activation " + epilogue.at("activation").dump() + " is not one cuDNN's graph takes");
    }
    check_step_buffers(k, buffers, expected, where);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(where + ": malformed parameters: " + e.what());
  }
}

}  // namespace kforge
