#include "codegen/half_activations.h"

#include "codegen/half_results.h"
#include "codegen/half_views.h"
#include "ir/conv.h"
#include "ir/ops.h"
#include "ir/shape_rules.h"

namespace kforge {

Graph half_activations_form(const Graph& last) {
  Graph marked = last;
  for (Node& n : marked.nodes) {
    if (n.op != "conv" || !is_channels_last(n.attrs) || n.type.dtype != DType::f32) continue;
    const TensorType& x = marked.at(n.args[0]).type;
    if (x.dtype != DType::f32 || depthwise_2d(conv_dims(x.shape, marked.at(n.args[1]).type.shape, n.attrs, "node '" + n.name + "': ")))
      continue;
    n.attrs["storage_dtype"] = "f16";  // what half_results reads: the dtype the result is stored in
  }
  Graph g = views_before_half_casts(half_results(marked, true));
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
