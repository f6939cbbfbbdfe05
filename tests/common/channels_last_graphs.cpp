#include "common/channels_last_graphs.h"

#include "common/graph_json.h"

namespace kforge::testing::channels_last_graphs {

const json kPad1 = {{"padding", {1, 1}}};
const json kNorm = {{"eps", 1e-5}};

// conv (bias) -> BatchNorm -> ReLU -> strided conv -> ReLU: two neighbouring convolutions.
json chain(Shape x) {
  return {{"inputs", {value("x", x)}},
          {"params", {value("w1", {8, 5, 3, 3}), value("b1", {8}), value("g1", {8}), value("e1", {8}), value("w2", {6, 8, 3, 3})}},
          {"nodes", {node("c1", "conv", {"x", "w1", "b1"}, kPad1), node("n1", "batch_norm", {"c1", "g1", "e1"}, kNorm),
                     node("r1", "relu", {"n1"}), node("c2", "conv", {"r1", "w2"}, {{"stride", {2, 2}}}), node("y", "relu", {"c2"})}},
          {"outputs", {"y"}}};
}

// A ResNet basic block: the input is both the first convolution's and the residual sum's.
json residual() {
  return {{"inputs", {value("x", {2, 8, 7, 6})}},
          {"params", {value("w1", {8, 8, 3, 3}), value("g1", {8}), value("e1", {8}), value("w2", {8, 8, 3, 3}), value("g2", {8}),
                      value("e2", {8})}},
          {"nodes", {node("c1", "conv", {"x", "w1"}, kPad1), node("n1", "batch_norm", {"c1", "g1", "e1"}, kNorm),
                     node("r1", "relu", {"n1"}), node("c2", "conv", {"r1", "w2"}, kPad1),
                     node("n2", "batch_norm", {"c2", "g2", "e2"}, kNorm), node("s", "add", {"n2", "x"}), node("y", "relu", {"s"})}},
          {"outputs", {"y"}}};
}

// What needs the channels-first value: a GroupNorm (its grouped view), a pool, and the convolution's result as an
// output of its own; a 3-D convolution; a depthwise and a transposed convolution, which stay as they are.
json readers_of_every_kind() {
  return {{"inputs", {value("x", {2, 4, 10, 9}), value("v", {1, 3, 5, 6, 4})}},
          {"params", {value("w1", {6, 4, 3, 3}), value("g", {6}), value("e", {6}), value("wd", {6, 1, 3, 3}),
                      value("wt", {6, 2, 2, 2}), value("w3", {2, 3, 3, 3, 2})}},
          {"nodes", {node("c1", "conv", {"x", "w1"}), node("gn", "group_norm", {"c1", "g", "e"}, {{"groups", 2}, {"eps", 1e-5}}),
                     node("p", "max_pool", {"gn"}, {{"nd", 2}, {"kernel", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}}}),
                     node("d", "conv", {"c1", "wd"}, {{"groups", 6}, {"padding", {1, 1}}}),
                     node("t", "conv_transpose", {"d", "wt"}, {{"stride", {2, 2}}}),
                     node("c3", "conv", {"v", "w3"}, {{"padding", {1, 0, 1}}}), node("r3", "sigmoid", {"c3"})}},
          {"outputs", {"p", "c1", "t", "r3"}}};
}

// An Inception-style module: two branches concatenated along the channels, read by the next convolution.
json branches() {
  return {{"inputs", {value("x", {2, 4, 8, 7})}},
          {"params", {value("wa", {3, 4, 1, 1}), value("wb", {5, 4, 3, 3}), value("wc", {6, 8, 3, 3})}},
          {"nodes", {node("a", "conv", {"x", "wa"}), node("ra", "relu", {"a"}), node("b", "conv", {"x", "wb"}, kPad1),
                     node("rb", "tanh", {"b"}), node("cat", "cat", {"ra", "rb"}, {{"dim", 1}}), node("c", "conv", {"cat", "wc"})}},
          {"outputs", {"c"}}};
}

// Pools between and after convolutions (a VGG's): pooled as they are, channels-last; a global mean (a classifier's
// head) and a variance over all but the channels.
json pooled() {
  return {{"inputs", {value("x", {2, 3, 9, 10})}}, {"params", {value("w1", {4, 3, 3, 3}), value("w2", {5, 4, 3, 3})}},
          {"nodes", {node("c1", "conv", {"x", "w1"}, kPad1), node("r1", "relu", {"c1"}),
                     node("p1", "max_pool", {"r1"}, {{"nd", 2}, {"kernel", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}}}),
                     node("c2", "conv", {"p1", "w2"}, kPad1),
                     node("p2", "avg_pool", {"c2"}, {{"nd", 2}, {"kernel", {3, 3}}, {"stride", {2, 2}}, {"padding", {1, 1}},
                                                      {"count_include_pad", false}, {"ceil_mode", true}}),
                     node("m", "mean", {"c2"}, {{"dims", {2, 3}}, {"keepdim", false}}),
                     node("v", "var", {"c2"}, {{"dims", {0, 2, 3}}, {"keepdim", true}, {"correction", 1}})}},
          {"outputs", {"p2", "m", "v"}}};
}

// A VGG stage's end: conv (bias) -> BatchNorm -> ReLU -> 2x2 max pool -> conv.
json normed_pooled() {
  return {{"inputs", {value("x", {2, 4, 10, 12})}},
          {"params", {value("w1", {6, 4, 3, 3}), value("b1", {6}), value("g1", {6}), value("e1", {6}), value("w2", {5, 6, 3, 3})}},
          {"nodes", {node("c1", "conv", {"x", "w1", "b1"}, kPad1), node("n1", "batch_norm", {"c1", "g1", "e1"}, kNorm),
                     node("r1", "relu", {"n1"}),
                     node("p1", "max_pool", {"r1"}, {{"nd", 2}, {"kernel", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}}}),
                     node("c2", "conv", {"p1", "w2"}, kPad1)}},
          {"outputs", {"c2"}}};
}

// A style-transfer generator's layers: conv (bias) -> BatchNorm -> ReLU -> reflect padding (one row above, two
// below, one column each side) -> conv -> replicate padding -> conv, the result padded with a constant (channels
// first again, as the graph returns it).
json padded() {
  auto pad = [](const std::string& name, const std::string& x, std::vector<int64_t> pads, const std::string& mode) {
    json attrs = {{"pads", pads}, {"mode", mode}};
    if (mode == "constant") attrs["value"] = 0.5;
    return node(name, "pad", {x}, attrs);
  };
  return {{"inputs", {value("x", {2, 5, 9, 11})}},
          {"params", {value("w1", {8, 5, 3, 3}), value("b1", {8}), value("g1", {8}), value("e1", {8}), value("w2", {6, 8, 3, 3}),
                      value("w3", {4, 6, 3, 3})}},
          {"nodes", {node("c1", "conv", {"x", "w1", "b1"}), node("n1", "batch_norm", {"c1", "g1", "e1"}, kNorm),
                     node("r1", "relu", {"n1"}), pad("p1", "r1", {0, 0, 0, 0, 1, 2, 1, 1}, "reflect"),
                     node("c2", "conv", {"p1", "w2"}), pad("p2", "c2", {0, 0, 0, 0, 1, 1, 2, 1}, "replicate"),
                     node("c3", "conv", {"p2", "w3"}), pad("y", "c3", {0, 0, 1, 0, 2, 1, 0, 3}, "constant")}},
          {"outputs", {"y"}}};
}

std::vector<std::pair<std::string, json>> all() {
  return {{"chain", chain()}, {"residual", residual()}, {"readers_of_every_kind", readers_of_every_kind()}, {"branches", branches()},
          {"pooled", pooled()}, {"normed_pooled", normed_pooled()}, {"padded", padded()}};
}

Schedule calls_in(const GraphAnalysis& a, Precision precision, bool library_epilogue) {
  Schedule s;
  s.channels_last = true;
  for (const KernelGroup& grp : a.groups(true, true))
    if (grp.kind == GroupKind::conv && grp.channels_last) {
      KernelSchedule ks{.strategy = Strategy::library, .precision = precision, .layout = Layout::nhwc,
                        .library_epilogue = library_epilogue};
      if (is_legal(grp, ks)) s.kernels[grp.key] = ks;
    }
  return s;
}

}  // namespace kforge::testing::channels_last_graphs
