#include "codegen/conv_epilogue.h"

#include <algorithm>
#include <optional>

#include "ir/conv.h"
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
      // A concatenation reads its parts from memory as they are: nothing is free there (a padding computes the
      // arithmetic it pads: codegen/kernel_writer.cpp, at_source_coordinates).
      if ((!is_elementwise_op(n.op) || n.op == "cat") && n.op != "reduce") return false;
      ++readers;
    }
  return readers > 0;
}

// Whether `id` is a convolution nothing else reads that takes an epilogue: read once, no graph output, no
// activation of its own yet (a bias may be folded already).
bool open_conv(const Graph& g, const std::vector<int>& uses, int id) {
  const Node& c = g.at(id);
  return is_conv_op(c.op) && uses[id] == 1 && !is_output(g, id) && !c.has_attr("activation");
}

// The conv node `add` (conv + channel bias view) becomes, with the bias as its third argument; nullopt if it is
// not that pattern.
std::optional<Node> with_bias(const Graph& g, const std::vector<int>& uses, const Node& add) {
  if (add.op != "add") return std::nullopt;
  for (int side : {0, 1}) {
    const int cv = add.args[side];
    const Node& conv = g.at(cv);
    if (!open_conv(g, uses, cv) || conv.args.size() != 2 || add.type != conv.type) continue;
    const int bias = channel_bias(g, add.args[1 - side], conv.type.shape.size(), conv.type.shape[1]);
    if (bias < 0) continue;
    Node folded = conv;
    folded.name = add.name;
    folded.args.push_back(bias);
    return folded;
  }
  return std::nullopt;
}

}  // namespace

bool is_conv_activation(const Node& a) {
  static const char* ops[] = {"relu", "sigmoid", "tanh", "gelu", "silu", "elu", "leaky_relu", "hardtanh"};
  return a.type.dtype == DType::f32 && std::find(std::begin(ops), std::end(ops), a.op) != std::end(ops);
}

Graph fold_conv_epilogues(const Graph& prim) {
  Graph g = prim;
  const std::vector<int> uses = g.use_counts();
  // Each rewrite replaces the last node of its pattern in place (its id, so the graph's outputs and readers still
  // name it) and leaves the ones before it unread: the use counts of the nodes a later pattern looks at hold.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (read_only_where_a_bias_is_free(g, int(i))) continue;
    if (auto folded = with_bias(g, uses, n)) {
      g.nodes[i] = std::move(*folded);
      continue;
    }
    if (!is_conv_activation(n)) continue;
    const int arg = n.args[0];
    std::optional<Node> folded;
    if (open_conv(g, uses, arg)) folded = g.at(arg);
    else if (uses[arg] == 1 && !is_output(g, arg)) folded = with_bias(g, uses, g.at(arg));
    if (!folded || folded->type != n.type) continue;
    folded->name = n.name;
    folded->attrs["activation"] = {{"op", n.op}, {"attrs", n.attrs}};
    g.nodes[i] = std::move(*folded);
  }
  return g;
}

}  // namespace kforge
