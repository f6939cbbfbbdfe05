// kforge's direct depthwise convolution (a conv group under strategy tile; KernelGroup::depthwise): each output
// channel reads one input channel through its own small kernel, so the work is a stencil over each (image,
// channel) plane, bound by memory, where cuDNN's fp32 engines reach a fraction of the bandwidth (07_conv2d_depthwise
// 6.1 ms against a 0.5 ms floor). A block stages the input window of a tile of outputs (schedule.h, DirectConvTile)
// in shared memory, zero outside the image (the padding); each thread then walks `items` consecutive output rows of one
// column: per kernel column it loads the input column the rows share into registers once and accumulates every (row,
// tap) product with fmaf, the weights held in registers.
// Plain fp32 arithmetic, one output at a time: the strict tier's. The bias was split off (ir/conv.h) and runs
// in the pointwise kernel that reads the result, unless conv_epilogue.h folded it (and maybe an activation) back:
// then the kernel applies them as it writes.
#include "codegen/emitters.h"
#include "ir/error.h"

namespace kforge {

PlanKernel emit_conv_direct(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, int x, int w, int y,
                            const ConvEpilogue& e) {
  const int bias = e.bias;
  KF_ASSERT(g.depthwise.has_value(), "emit_conv_direct on a group that is no 2-D depthwise convolution");
  const ConvDims& d = *g.depthwise;
  const DirectConvTile t = direct_conv_tile(d, ks);
  const auto I = i64_literal;
  const auto N = [](int64_t v) { return std::to_string(v); };
  const int64_t kh = d.kernel[0], kw = d.kernel[1], sh = d.stride[0], sw = d.stride[1], dh = d.dilation[0], dw = d.dilation[1];
  const int64_t h = d.in[0], wd = d.in[1], oh = d.out[0], ow = d.out[1];
  const int64_t tiles_h = (oh + t.rows - 1) / t.rows, tiles_w = (ow + t.cols - 1) / t.cols;
  const int64_t tiles = d.n * d.c * tiles_h * tiles_w;
  const int64_t col = (ks.items - 1) * sh + (kh - 1) * dh + 1;  // input rows one thread's output rows read
  std::string s = "// kforge kernel " + name + ": direct depthwise convolution for conv group '" + g.key + "': " +
                  N(d.n) + " x " + N(d.c) + " planes " + N(h) + "x" + N(wd) + " -> " + N(oh) + "x" + N(ow) + ", kernel " +
                  N(kh) + "x" + N(kw) + ", stride " + N(sh) + "x" + N(sw) + ", padding " + N(d.padding[0]) + "x" +
                  N(d.padding[1]) + ", dilation " + N(dh) + "x" + N(dw) + "\n// tile " + N(t.rows) + "x" + N(t.cols) +
                  " outputs from a " + N(t.in_rows) + "x" + N(t.in_cols) + " window; " + N(ks.items) +
                  " rows per thread\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + N(ks.block) + ") " + name +
       "(const float* __restrict__ x, const float* __restrict__ w, " + (bias >= 0 ? "const float* __restrict__ bias, " : "") +
       "float* __restrict__ y) {\n";
  s += "  __shared__ float window[" + N(t.in_rows * t.in_cols) + "];\n";
  s += "  __shared__ float taps[" + N(kh * kw) + "];\n";
  s += "  const int tx = threadIdx.x % 32, row0 = threadIdx.x / 32 * " + N(ks.items) + ";  // tile-local output\n";
  s += "  for (i64 t = blockIdx.x; t < " + I(tiles) + "; t += gridDim.x) {\n";
  s += "    const i64 plane = t / " + I(tiles_h * tiles_w) + ";  // image * channels + channel\n";
  s += "    const i64 oh0 = t / " + I(tiles_w) + " % " + I(tiles_h) + " * " + I(t.rows) + ", ow0 = t % " + I(tiles_w) +
       " * " + I(t.cols) + ";\n";
  s += "    const i64 ih0 = oh0 * " + I(sh) + " - " + I(d.padding[0]) + ", iw0 = ow0 * " + I(sw) + " - " + I(d.padding[1]) + ";\n";
  s += "    const float* xp = x + plane * " + I(h * wd) + ";\n";
  s += "    __syncthreads();  // the previous tile's window is read before it is overwritten\n";
  s += "    for (int i = threadIdx.x; i < " + N(kh * kw) + "; i += " + N(ks.block) + ") taps[i] = w[plane % " + I(d.c) +
       " * " + I(kh * kw) + " + i];\n";
  // The window, row by row: warp v loads rows v, v + warps, ...; lane l columns l, l + 32, ... . Which columns lie
  // inside the image is known once per tile; the row loop has a fixed trip count and unrolls, so a thread's
  // loads are all issued before the first of them returns (an index per element, divided by the window's
  // width, took ~30 instructions and left one load in flight).
  const int64_t warps = ks.block / 32, rows_per_warp = (t.in_rows + warps - 1) / warps, col_slots = (t.in_cols + 31) / 32;
  s += "    bool col_in[" + N(col_slots) + "];\n";
  s += "    _Pragma(\"unroll\") for (int j = 0; j < " + N(col_slots) + "; ++j) {\n";
  s += "      const i64 iw = iw0 + tx + 32 * j;\n";
  s += "      col_in[j] = tx + 32 * j < " + N(t.in_cols) + " && iw >= 0 && iw < " + I(wd) + ";\n    }\n";
  s += "    _Pragma(\"unroll\") for (int k = 0; k < " + N(rows_per_warp) + "; ++k) {\n";
  s += "      const int r = threadIdx.x / 32 + " + N(warps) + " * k;  // window row\n";
  s += "      const i64 ih = ih0 + r;\n";
  s += "      const bool row_in = r < " + N(t.in_rows) + " && ih >= 0 && ih < " + I(h) + ";\n";
  s += "      const float* src = xp + ih * " + I(wd) + " + iw0;\n";
  s += "      _Pragma(\"unroll\") for (int j = 0; j < " + N(col_slots) + "; ++j)\n";
  s += "        if (r < " + N(t.in_rows) + " && tx + 32 * j < " + N(t.in_cols) + ")\n";
  s += "          window[r * " + N(t.in_cols) + " + tx + 32 * j] = row_in && col_in[j] ? src[tx + 32 * j] : 0.f;\n";
  s += "    }\n    __syncthreads();\n";
  s += "    float wr[" + N(kh * kw) + "];\n";
  s += "    _Pragma(\"unroll\") for (int i = 0; i < " + N(kh * kw) + "; ++i) wr[i] = taps[i];\n";
  s += "    float acc[" + N(ks.items) + "];\n";
  s += "    _Pragma(\"unroll\") for (int r = 0; r < " + N(ks.items) + "; ++r) acc[r] = 0.f;\n";
  s += "    _Pragma(\"unroll\") for (int b = 0; b < " + N(kw) + "; ++b) {\n";
  s += "      float in[" + N(col) + "];  // the input column this thread's rows share at kernel column b\n";
  s += "      _Pragma(\"unroll\") for (int j = 0; j < " + N(col) + "; ++j) in[j] = window[(row0 * " + N(sh) + " + j) * " +
       N(t.in_cols) + " + tx * " + N(sw) + " + b * " + N(dw) + "];\n";
  s += "      _Pragma(\"unroll\") for (int r = 0; r < " + N(ks.items) + "; ++r)\n";
  s += "        _Pragma(\"unroll\") for (int a = 0; a < " + N(kh) + "; ++a) acc[r] = fmaf(in[r * " + N(sh) + " + a * " + N(dh) +
       "], wr[a * " + N(kw) + " + b], acc[r]);\n";
  s += "    }\n";
  s += "    _Pragma(\"unroll\") for (int r = 0; r < " + N(ks.items) + "; ++r) {\n";
  s += "      const i64 oh = oh0 + row0 + r, ow = ow0 + tx;\n";
  s += "      if (oh < " + I(oh) + " && ow < " + I(ow) + ") {\n" +
       e.store("        y[plane * " + I(oh * ow) + " + oh * " + I(ow) + " + ow]", "acc[r]", "plane % " + I(d.c)) + "      }\n";
  s += "    }\n  }\n}\n";
  return generated_kernel(g, ks, name, s, bias >= 0 ? std::vector<int>{x, w, bias, y} : std::vector<int>{x, w, y},
                          clamp_grid(g, tiles), ks.block);
}

}  // namespace kforge
