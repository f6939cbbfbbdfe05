#include "codegen/half_activations.h"

#include <algorithm>

#include "codegen/half_results.h"
#include "codegen/half_views.h"
#include "ir/conv.h"
#include "ir/half_operands.h"
#include "ir/ops.h"
#include "ir/shape_rules.h"

namespace kforge {

namespace {

// A max pool whose result only fp16 roundings read (the next convolution's input) pools the fp16 rounding of its
// input, stored by the kernel computing it, where that input is elementwise arithmetic nothing else reads: the
// same values (rounding to nearest is monotonic: the rounded maximum is the maximum of the rounded values), half
// the bytes written and read between the norm's kernel and the pool.
Graph max_pools_of_rounded_values(const Graph& g) {
  const std::vector<std::vector<int>> readers = g.readers();
  auto rounds_to_f16 = [&](int r) { return g.at(r).op == "cast" && g.at(r).type.dtype == DType::f16; };
  Graph out;
  std::vector<int> at(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = g.nodes[i];
    for (int& a : n.args)
      if (a >= 0) a = at[size_t(a)];
    const int x = g.nodes[i].op == "pool" ? g.nodes[i].args[0] : -1;
    if (x >= 0 && n.attrs.value("kind", "") == "max" && !readers[i].empty() &&
        std::all_of(readers[i].begin(), readers[i].end(), rounds_to_f16) && g.at(x).type.dtype == DType::f32 &&
        is_elementwise_op(g.at(x).op) && readers[size_t(x)].size() == 1) {
      const Shape& shape = g.at(x).type.shape;
      const int rounded = out.add(Node{.name = fresh_name(g.at(x).name + "_f16", {&g, &out}), .op = "cast", .args = {n.args[0]},
                                       .attrs = {{"dtype", "f16"}}, .type = {DType::f16, shape}});
      n.args[0] = out.add(Node{.name = fresh_name(g.at(x).name + "_rounded", {&g, &out}), .op = "cast", .args = {rounded},
                               .attrs = {{"dtype", "f32"}}, .type = {DType::f32, shape}});
    }
    at[i] = out.add(std::move(n));
  }
  copy_roles(g, at, out);
  return out;
}

}  // namespace

Graph half_activations_form(const Graph& last) {
  // The form's channels-last convolutions of f32 tensors (never a 2-D depthwise one: codegen/channels_last.h); a
  // half-precision task's own are read as stored already.
  Graph marked = last;
  for (size_t i = 0; i < marked.nodes.size(); ++i) {
    Node& n = marked.nodes[i];
    if (n.op == "conv" && is_channels_last(n.attrs) && !half_operands(marked, int(i)))
      n.attrs["storage_dtype"] = "f16";  // what half_results reads: the dtype the result is stored in
  }
  Graph g = max_pools_of_rounded_values(views_before_half_casts(half_results(marked, true)));
  // A weight's (or the network input's) transpose into channels last that only its fp16 rounding reads: below
  // kStridedUpTo elements (most weights) the rounding reads the f32 tensor through the permute, strided, one small
  // kernel; above, it is rounded first, in order, and transposed in 16 bits by a tiled transpose (a strided read of a
  // large tensor wastes most of each sector it loads). Either way no f32 copy: an f32 transpose and a cast of it
  // wrote and read one. The two nodes trade places and keep their ids (the permute's only reader was the cast, just
  // after it in order).
  constexpr int64_t kStridedUpTo = 1 << 20;
  const std::vector<std::vector<int>> readers = g.readers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& p = g.nodes[i];
    if (p.op != "permute" || !p.attrs.value("materialize", false) || readers[i].size() != 1) continue;
    Node& cast = g.nodes[size_t(readers[i][0])];
    if (cast.op != "cast" || cast.type.dtype != DType::f16) continue;
    if (numel(p.type.shape) <= kStridedUpTo) {
      p.attrs.erase("materialize");
      continue;
    }
    Node rounded = cast, permute = p;
    rounded.name = fresh_name(g.at(p.args[0]).name + "_f16", {&g});
    rounded.args = p.args;
    rounded.type.shape = g.at(p.args[0]).type.shape;
    permute.name = cast.name;  // the stored 16-bit value keeps the name its readers' groups know
    permute.args = {int(i)};
    permute.type.dtype = DType::f16;
    g.nodes[i] = std::move(rounded);
    cast = std::move(permute);
  }
  return g;
}

}  // namespace kforge
