// Pooling kernels: one thread per output element walks its window (sizes are compile-time constants, so the
// loops unroll); a thread takes `items` outputs a block apart. The windows are ir/pool.h's (PoolDim), adaptive
// ones included; average pooling divides as PyTorch does: by the window clipped to the padded input when
// count_include_pad, else by the number of in-bounds elements.
#include "codegen/emitters.h"
#include "ir/conv.h"
#include "ir/half_operands.h"
#include "ir/pool.h"

namespace kforge {

std::vector<PlanKernel> emit_pool(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  const Node& pool = gr.at(g.anchor);
  bool is_max = pool.attr_s("kind") == "max";
  bool include_pad = pool.attrs.value("count_include_pad", true);
  // A half-precision task's input is read as stored (its cast has no memory: partition.cpp), each element widened.
  const int half = half_cast_source(gr, pool.args[0]);
  Access in = access_of(cx.partition, half >= 0 ? half : pool.args[0]);
  const std::vector<PoolDim> dims = pool_dims(pool.attrs, in.shape, "pool group '" + g.key + "'");
  const std::string widen = half < 0 ? "" : gr.at(half).type.dtype == DType::bf16 ? "kf_from_bf16" : "kf_from_f16";
  KernelWriter w(cx.partition, g, cx.buffer_of_owner);
  int ib = w.buffer_id(in.owner);
  w.use_buffer(ib, false);
  std::vector<std::string> c(g.shape.size());
  std::vector<int64_t> all;
  for (size_t d = 0; d < g.shape.size(); ++d) all.push_back(int64_t(d));
  int64_t n = numel(g.shape);

  // A block per chunk of block * items outputs; thread t computes outputs t, t + block, ... of it, unrolled, so
  // the window loads of `items` outputs are in flight together (as a pointwise kernel's `items` vectors are).
  // Measured on 42_avg_pool1d: 128 x 4 items 0.864 ms, where one output a thread took 0.922.
  const int64_t chunk = int64_t(ks.block) * ks.items;
  std::string b = "  for (i64 chunk = (i64)blockIdx.x * " + std::to_string(chunk) + "; chunk < " + std::to_string(n) +
                  "LL; chunk += (i64)gridDim.x * " + std::to_string(chunk) + ") {\n";
  b += "#pragma unroll\n  for (int u = 0; u < " + std::to_string(ks.items) + "; ++u) {\n";
  b += "    const i64 idx = chunk + (i64)u * " + std::to_string(ks.block) + " + threadIdx.x;\n    if (idx >= " + std::to_string(n) + "LL) break;\n";
  b += decompose_index("idx", all, g.shape, c, "    ");
  b += "    float acc = " + std::string(is_max ? "-KF_INF" : "0.f") + ";\n    int count = 0;\n";
  // The channel's and each spatial dim's place: [N, C, *spatial], or channels-last [N, *spatial, C] (ir/pool.h),
  // whose neighbouring threads read neighbouring channels.
  const bool last = is_channels_last(pool.attrs);
  const size_t channel = last ? g.shape.size() - 1 : 1;
  auto spatial = [&](size_t s) { return last ? 1 + s : 2 + s; };
  std::string base = std::to_string(in.offset) + " + c0 * " + std::to_string(in.strides[0]) + "LL + c" + std::to_string(channel) +
                     " * " + std::to_string(in.strides[channel]) + "LL";
  std::string indent = "    ", cond, off = base, divisor = "1";
  const auto I = i64_literal;
  for (size_t s = 0; s < dims.size(); ++s) {
    const PoolDim& d = dims[s];
    const std::string i = std::to_string(s), o = "c" + std::to_string(spatial(s));
    // The window's first position and its end (PoolDim): adaptive windows' bounds are quotients of the output index.
    const std::string start = d.adaptive ? "(" + o + " * " + I(d.in) + " / " + I(d.out) + ")"
                                         : "(" + o + " * " + I(d.stride) + " - " + I(d.padding) + ")";
    const std::string end = d.adaptive ? "((" + o + " + 1) * " + I(d.in) + " + " + I(d.out - 1) + ") / " + I(d.out)
                                       : "min(" + start + " + " + I(d.kernel) + ", " + I(d.in + d.padding) + ")";
    b += indent + "for (int w" + i + " = 0; w" + i + " < " + std::to_string(d.kernel) + "; ++w" + i + ") {\n";
    indent += "  ";
    b += indent + "const i64 p" + i + " = " + start + " + w" + i + " * " + std::to_string(d.dilation) + ";\n";
    cond += (cond.empty() ? "" : " && ") + std::string("p") + i + " >= 0 && p" + i + " < " + (d.adaptive ? end : I(d.in));
    off += " + p" + i + " * " + std::to_string(in.strides[spatial(s)]) + "LL";
    divisor += " * (" + end + " - " + start + ")";
  }
  b += indent + "if (" + cond + ") {\n" + indent + "  const float x = " + widen + "(b" + std::to_string(ib) + "[" + off + "]);\n";
  b += indent + (is_max ? "  acc = kf_max(acc, x);\n" : "  acc += x;\n") + indent + "  ++count;\n" + indent + "}\n";
  for (size_t s = 0; s < dims.size(); ++s) {
    indent.resize(indent.size() - 2);
    b += indent + "}\n";
  }
  if (!is_max) b += "    acc = acc / (float)(" + (include_pad ? divisor : std::string("count")) + ");\n";
  w.begin_site(c, "idx", "    ");
  w.bind(g.anchor, "acc");
  std::string writes;
  for (int o : g.elem_outputs) {
    std::string v = w.value(o);
    writes += "    " + w.buf(o) + "[" + w.out_index(o) + "] = " + v + ";\n";
  }
  b += w.take() + writes + "  }\n  }\n";
  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ks.block) + ") " + name + "(" + w.params() + ") {\n" + b + "}\n";
  return {generated_kernel(g, ks, name, s, w.used_buffers(), full_grid((n + chunk - 1) / chunk), ks.block)};
}

}  // namespace kforge
