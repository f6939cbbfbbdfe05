// Convolutions: a conv group becomes one cuDNN step (runtime/cudnn_conv.cpp builds the backend graph: one
// CONVOLUTION_FORWARD operation, engines from the heuristic, an execution plan), not a generated kernel.
// The bias was split off by decompose (ir/conv.h) and runs in the pointwise kernel that reads the result.
// The step's `library` block:
//   op "conv"; layout "NCHW" (contiguous [N, C, *spatial] tensors; the name stands for 1-3 spatial dims);
//   n, c, o, groups; in, kernel, out: spatial extents; stride, padding (symmetric), dilation: per spatial dim;
//   precision: fp32 (engines without tensor-core / down-converting numerical notes) | tf32 (any engine);
//   algo: index into the heuristic's engines that the precision allows, clamped at load;
//   workspace_bytes: the cap; an engine needing more is skipped at load.
// args: [x, w, y, workspace]. check_conv_step holds a plan read from JSON to this contract.
#include <algorithm>

#include "codegen/emitters.h"
#include "ir/conv.h"
#include "ir/error.h"

namespace kforge {

namespace {
// cuDNN's forward engines for fp32 need little workspace (implicit GEMM: none; FFT and Winograd variants: up
// to a few tens of MB at these sizes); the cap is checked per engine at load.
constexpr int64_t kWorkspaceBytes = 64 << 20;
const char* kWorkspaceName = "cudnn.workspace";

nlohmann::json conv_attrs(const nlohmann::json& lib) {
  return {{"stride", lib.at("stride")}, {"padding", lib.at("padding")}, {"dilation", lib.at("dilation")},
          {"groups", lib.at("groups")}};
}
}  // namespace

std::vector<PlanKernel> emit_conv(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& graph = *cx.partition.graph;
  const Node& cv = graph.at(g.anchor);
  if (cv.args.size() != 2) throw InternalError("emit_conv: conv '" + cv.name + "' still has its bias; decompose first");
  ConvDims d = conv_dims(graph.at(cv.args[0]).type.shape, graph.at(cv.args[1]).type.shape, cv.attrs, "node '" + cv.name + "': ");
  PlanKernel k;
  k.name = name;
  k.group = g.key;
  k.kind = StepKind::cudnn;
  k.grid = 0;  // the library chooses its kernels and geometry
  k.block = 0;
  k.args = {buffer_of(cx, cv.args[0]), buffer_of(cx, cv.args[1]), buffer_of(cx, g.anchor),
            library_workspace(cx, kWorkspaceName, kWorkspaceBytes)};
  k.library = {{"op", "conv"}, {"layout", "NCHW"}, {"n", d.n}, {"c", d.c}, {"o", d.o}, {"groups", d.groups},
               {"in", d.in}, {"kernel", d.kernel}, {"out", d.out}, {"stride", d.stride}, {"padding", d.padding},
               {"dilation", d.dilation}, {"precision", to_string(ks.precision)}, {"algo", ks.algo},
               {"workspace_bytes", kWorkspaceBytes}};
  k.schedule = {{"strategy", to_string(ks.strategy)}, {"precision", to_string(ks.precision)}, {"algo", ks.algo}};
  return {k};
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
  if (lib.value("layout", "") != "NCHW") throw UserError(where + ": layout must be NCHW");
  return d;
}

void check_conv_step(const PlanKernel& k, const std::vector<PlanBuffer>& buffers) {
  const std::string where = "plan: library step '" + k.name + "'";
  try {
    const auto& lib = k.library;
    ConvDims d = conv_step_dims(lib, where);
    precision_from_string(lib.at("precision"));
    if (lib.at("algo").get<int>() < 0) throw UserError(where + ": algo must be at least 0");
    int64_t x = d.n * d.c * numel(d.in), w = d.o * (d.c / d.groups) * numel(d.kernel);
    if (std::min({d.n, d.c, d.o}) < 1) throw UserError(where + ": n, c and o must be at least 1");
    check_step_buffers(k, buffers, {{"x", x}, {"w", w}, {"y", numel(d.result)},
                                    {"workspace", (lib.at("workspace_bytes").get<int64_t>() + 3) / 4}}, where);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(where + ": malformed parameters: " + e.what());
  }
}

}  // namespace kforge
