#include "codegen/conv_epilogue.h"

#include <algorithm>

#include "ir/ops.h"

namespace kforge {

namespace {

bool is_output(const Graph& g, int id) { return std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end(); }

// The bias vector behind `view` when it is decompose's [O, 1, ..] view of an [O] tensor (ir/decompose.cpp,
// channel_view) for a result of `rank` dims with O channels; -1 otherwise.
int channel_bias(const Graph& g, int view, size_t rank, int64_t channels) {
  const Node& v = g.at(view);
  if (v.op != "reshape" || v.type.shape.size() + 1 != rank || v.type.shape[0] != channels) return -1;
  if (std::any_of(v.type.shape.begin() + 1, v.type.shape.end(), [](int64_t e) { return e != 1; })) return -1;
  const TensorType& b = g.at(v.args[0]).type;
  return b.dtype == DType::f32 && b.shape == Shape{channels} ? v.args[0] : -1;
}

// Whether node `id` is read, and only by elementwise ops and reductions: kernels that read it anyway and can add
// a bias there for nothing (a pointwise chain, which also writes the sum where the graph returns it; a row
// kernel's loads, as a BatchNorm's statistics and normalisation).
bool read_only_where_a_bias_is_free(const Graph& g, int id) {
  int readers = 0;
  for (const Node& n : g.nodes)
    if (std::find(n.args.begin(), n.args.end(), id) != n.args.end()) {
      if (!is_elementwise_op(n.op) && n.op != "reduce") return false;
      ++readers;
    }
  return readers > 0;
}

}  // namespace

Graph fold_conv_bias(const Graph& prim) {
  Graph g = prim;
  std::vector<int> uses = g.use_counts();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (add.op != "add" || read_only_where_a_bias_is_free(g, int(i))) continue;
    for (int side : {0, 1}) {
      int cv = add.args[side];
      const Node& conv = g.at(cv);
      if (!is_conv_op(conv.op) || conv.args.size() != 2 || uses[cv] != 1 || is_output(g, cv) || add.type != conv.type) continue;
      int bias = channel_bias(g, add.args[1 - side], conv.type.shape.size(), conv.type.shape[1]);
      if (bias < 0) continue;
      Node folded = conv;
      folded.name = add.name;
      folded.args.push_back(bias);
      g.nodes[i] = std::move(folded);  // the add's id, so the graph's outputs still name it; conv is left unread
      break;
    }
  }
  return g;
}

}  // namespace kforge
