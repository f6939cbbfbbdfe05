#include <algorithm>

#include "codegen/device_prelude.h"
#include "codegen/emitters.h"

namespace kforge {

std::string decompose_index(const std::string& index, const std::vector<int64_t>& dims, const Shape& shape,
                            std::vector<std::string>& coords, const std::string& indent) {
  std::string s;
  // An index below 2^31 is split in 32-bit unsigned arithmetic: division by a constant is then a multiply
  // and a shift, where 64-bit division is a long emulated sequence per element.
  int64_t extent = 1;
  for (auto d : dims) extent *= shape[d];
  bool narrow = extent < (int64_t(1) << 31);
  std::string idx = narrow ? "(unsigned)(" + index + ")" : index, u = narrow ? "u" : "LL";
  int64_t stride = 1;
  for (int i = int(dims.size()) - 1; i >= 0; --i) {
    int64_t d = dims[i];
    std::string c = "c" + std::to_string(d);
    std::string e = stride == 1 ? idx : "(" + idx + " / " + std::to_string(stride) + u + ")";
    if (i > 0) e += " % " + std::to_string(shape[d]) + u;
    s += indent + "const i64 " + c + " = " + (e == index ? e : "(i64)(" + e + ")") + ";\n";
    coords[d] = c;
    stride *= shape[d];
  }
  return s;
}

std::string kernel_header(const Partition& p, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *p.graph;
  std::string s = "// kforge kernel " + name + ": " + to_string(g.kind) + " group '" + g.key + "'\n";
  s += "// iteration shape " + to_string(g.shape);
  if (!g.axes.empty()) s += ", axes " + to_string(Shape(g.axes.begin(), g.axes.end()));
  s += "\n";
  auto list = [&](const char* what, const std::vector<int>& ids) {
    if (ids.empty()) return;
    s += std::string("// ") + what + ":";
    for (int id : ids) s += " " + gr.at(id).name;
    s += "\n";
  };
  list("statistics", g.stats);
  list("elementwise outputs", g.elem_outputs);
  list("row outputs", g.row_outputs);
  s += "// schedule: strategy " + to_string(ks.strategy) + ", block " + std::to_string(ks.block) + ", vec " +
       std::to_string(ks.vec) + ", items " + std::to_string(ks.items) + ", chunks " + std::to_string(ks.chunks) +
       (ks.cache_row == RowCache::none        ? ""
        : ks.cache_row == RowCache::registers ? ", rows cached in registers"
        : ks.cache_row == RowCache::bulk      ? ", rows bulk-copied into shared memory, two buffers"
                                              : ", rows cached in shared memory") + "\n";
  return s;
}

PlanKernel generated_kernel(const KernelGroup& g, const KernelSchedule& ks, const std::string& name, const std::string& body,
                            std::vector<int> args, int64_t grid, int block) {
  PlanKernel k;
  k.name = name;
  k.group = g.key;
  k.source = device_prelude() + "\n" + body;
  k.args = std::move(args);
  k.grid = grid;
  k.block = block;
  k.schedule = to_json(ks);
  return k;
}

PlanKernel make_kernel(const KernelGroup& g, const KernelSchedule& ks, const std::string& name,
                       const std::string& body, const KernelWriter& w, int64_t grid, int block) {
  return generated_kernel(g, ks, name, body, w.used_buffers(), clamp_grid(g, grid), block);
}

int64_t full_grid(int64_t blocks) {
  // tools/microbench/elementwise_bw.cu on the H200, ReLU over 3.2 GB: 256 threads x 16 bytes x 4 a thread ran 1.561 ms
  // with a block per chunk against 1.611 with the grid clamped (clamp_grid).
  return std::clamp<int64_t>(blocks, 1, kMaxGridX);
}

int64_t clamp_grid(const KernelGroup& g, int64_t blocks) {
  // Grid-stride loops cover any size; more than ~64 waves of four blocks an SM only adds scheduling work.
  return std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t(g.target.sms) * 64 * 4));
}

int buffer_of(const EmitContext& cx, int node) { return cx.buffer_of_owner.at(cx.partition.storage.at(node)); }

int add_temp(EmitContext& cx, const std::string& name, DType dtype, Shape shape) {
  cx.buffers.push_back({BufferRole::temp, -1, name, dtype, std::move(shape)});
  return int(cx.buffers.size()) - 1;
}

int library_workspace(EmitContext& cx, const std::string& name, int64_t bytes) {
  for (size_t i = 0; i < cx.buffers.size(); ++i)
    if (cx.buffers[i].role == BufferRole::temp && cx.buffers[i].name == name) return int(i);
  return add_temp(cx, name, DType::f32, {(bytes + 3) / 4});
}

std::string i64_literal(int64_t v) { return std::to_string(v) + "LL"; }

}  // namespace kforge
