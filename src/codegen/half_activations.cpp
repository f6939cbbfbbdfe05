#include "codegen/half_activations.h"

#include "codegen/half_results.h"
#include "codegen/half_views.h"
#include "ir/conv.h"
#include "ir/ops.h"

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
  // A weight's (or the network input's) transpose into channels last that only its fp16 rounding reads is read by
  // that rounding's kernel in place, strided: one kernel writing the fp16 copy instead of an f32 one and a cast.
  const std::vector<std::vector<int>> readers = g.readers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.op != "permute" || !n.attrs.value("materialize", false) || readers[i].size() != 1) continue;
    const Node& reader = g.at(readers[i][0]);
    if (reader.op == "cast" && reader.type.dtype == DType::f16) n.attrs.erase("materialize");
  }
  return g;
}

}  // namespace kforge
