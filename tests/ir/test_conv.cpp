// conv in the IR: PyTorch's shape rules and their errors, the bias split decompose makes, and the interpreter
// on hand-computed values and on identities (a 1x1 conv is a matmul over channels; a grouped conv is its
// groups side by side). (tests/python's op cases hold the interpreter to PyTorch itself on every form.)
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <cmath>

#include "common/conv_graphs.h"
#include "common/graph_errors.h"
#include "common/random_inputs.h"
#include "ir/conv.h"
#include "ir/decompose.h"
#include "ir/error.h"
#include "ir/interpreter.h"

namespace kforge {
namespace {

using nlohmann::json;
using testing::conv;
using testing::expect_graph_error;

json attrs(std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
  return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
}

Shape shape_of(Shape x, Shape w, json a) { return graph_from_json(conv(x, w, a, false)).nodes.back().type.shape; }

TEST(ConvShape, FollowsTorch) {
  // out = floor((in + 2p - d (k - 1) - 1) / s) + 1 per spatial dim.
  EXPECT_EQ(shape_of({2, 3, 37}, {5, 3, 4}, attrs({1}, {0}, {1}, 1)), (Shape{2, 5, 34}));
  EXPECT_EQ(shape_of({2, 4, 41}, {6, 4, 5}, attrs({3}, {2}, {1}, 1)), (Shape{2, 6, 14}));
  EXPECT_EQ(shape_of({1, 4, 23, 21}, {6, 4, 3, 3}, attrs({2, 3}, {3, 1}, {2, 3}, 1)), (Shape{1, 6, 13, 6}));
  EXPECT_EQ(shape_of({2, 5, 11, 19}, {7, 5, 3, 5}, attrs({1, 2}, {1, 2}, {1, 1}, 1)), (Shape{2, 7, 11, 10}));
  EXPECT_EQ(shape_of({2, 8, 9, 10}, {12, 2, 3, 3}, attrs({1, 1}, {1, 1}, {1, 1}, 4)), (Shape{2, 12, 9, 10}));
  EXPECT_EQ(shape_of({1, 3, 7, 9, 8}, {4, 3, 3, 3, 2}, attrs({1, 2, 1}, {1, 1, 0}, {1, 1, 1}, 1)), (Shape{1, 4, 7, 5, 7}));
  // Absent attrs are PyTorch's defaults; one int stands for every spatial dim.
  EXPECT_EQ(shape_of({2, 3, 8, 8}, {4, 3, 3, 3}, json::object()), (Shape{2, 4, 6, 6}));
  EXPECT_EQ(shape_of({2, 3, 8, 8}, {4, 3, 3, 3}, {{"stride", 2}, {"padding", 1}}), (Shape{2, 4, 4, 4}));
  for (auto& s : testing::conv_graphs()) EXPECT_NO_THROW(graph_from_json(s.graph)) << s.name;
}

TEST(ConvShape, ErrorsNameTheCause) {
  expect_graph_error(conv({2, 6, 8, 8}, {4, 3, 3, 3}, attrs({1, 1}, {0, 0}, {1, 1}, 1), false),
                     "weight dim 1 (3) times groups (1) must equal the input channels (6)");
  expect_graph_error(conv({2, 6, 8, 8}, {4, 2, 3, 3}, attrs({1, 1}, {0, 0}, {1, 1}, 4), false),
                     "groups 4 must divide both the input channels (6) and the output channels (4)");
  expect_graph_error(conv({2, 3, 4, 4}, {4, 3, 5, 5}, attrs({1, 1}, {0, 0}, {1, 1}, 1), false),
                     "kernel extent 5 (dilated) exceeds the padded input extent 4 in spatial dim 0");
  expect_graph_error(conv({2, 3, 8, 8}, {4, 3, 3, 3}, attrs({1, 1}, {0, 0}, {4, 1}, 1), false),
                     "kernel extent 9 (dilated) exceeds the padded input extent 8");
  expect_graph_error(conv({2, 3, 8, 8}, {4, 3, 3, 3}, attrs({1, 1}, {0, 0}, {1, 1}, 1), false, "i64"), "input must be f32");
  expect_graph_error(conv({2, 3, 8, 8}, {4, 3, 3}, json::object(), false), "weight must have the input's rank");
  expect_graph_error(conv({3, 8}, {4, 3}, json::object(), false), "unbatched inputs are not supported");
  expect_graph_error(conv({2, 3, 8, 8}, {4, 3, 3, 3}, attrs({1}, {0, 0}, {1, 1}, 1), false),
                     "stride [1] must hold one int per spatial dim (2)");
  expect_graph_error(conv({2, 3, 8, 8}, {4, 3, 3, 3}, attrs({0, 1}, {0, 0}, {1, 1}, 1), false),
                     "stride and dilation must be at least 1");
  json bad_bias = conv({2, 3, 8, 8}, {4, 3, 3, 3}, json::object(), true);
  bad_bias["params"][1]["shape"] = {3};
  expect_graph_error(bad_bias, "conv bias [3] must be [4] (one per output channel)");
}

TEST(ConvDecompose, TheBiasBecomesAnAddOfAChannelView) {
  Graph g = decompose(graph_from_json(testing::conv_graph("conv2d")));
  std::vector<std::string> ops;
  for (auto& n : g.nodes)
    if (n.op != "input" && n.op != "param") ops.push_back(n.op);
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (std::vector<std::string>{"add", "conv", "reshape"}));
  for (auto& n : g.nodes) {
    if (n.op == "conv") {
      EXPECT_EQ(n.args.size(), 2u) << "the primitive conv is cuDNN's, without a bias";
    } else if (n.op == "reshape") {
      EXPECT_EQ(n.type.shape, (Shape{8, 1, 1}));
    }
  }
}

HostTensor host(Shape s, std::vector<double> v) { return {{DType::f32, s}, std::move(v)}; }

TEST(ConvInterpreter, HandComputed) {
  // x = [1 2 3 4 5], w = [1 0 -1], padding 1, stride 2: outputs at -1..1, 1..3, 3..5 of the zero-padded x.
  Graph g = graph_from_json(conv({1, 1, 5}, {1, 1, 3}, attrs({2}, {1}, {1}, 1), true));
  auto y = interpret(g, {host({1, 1, 5}, {1, 2, 3, 4, 5})}, {host({1, 1, 3}, {1, 0, -1}), host({1}, {10})});
  EXPECT_EQ(y[0].data, (std::vector<double>{10 + 0 - 2, 10 + 2 - 4, 10 + 4 - 0}));
  // Dilation 2 over x = 0..6: y[i] = x[i] + x[i + 2] + x[i + 4].
  Graph d = graph_from_json(conv({1, 1, 7}, {1, 1, 3}, attrs({1}, {0}, {2}, 1), false));
  y = interpret(d, {host({1, 1, 7}, {0, 1, 2, 3, 4, 5, 6})}, {host({1, 1, 3}, {1, 1, 1})});
  EXPECT_EQ(y[0].data, (std::vector<double>{6, 9, 12}));
}

TEST(ConvInterpreter, PointwiseIsAMatmulOverChannels) {
  Graph g = graph_from_json(testing::conv_graph("conv2d_pointwise"));
  std::mt19937_64 rng(3);
  auto x = testing::random_values(g, g.inputs, rng), p = testing::random_values(g, g.params, rng);
  auto y = interpret(decompose(g), x, p);
  const Shape& xs = x[0].type.shape;  // [2, 16, 9, 7], weight [24, 16, 1, 1]
  int64_t hw = xs[2] * xs[3];
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t o = 0; o < 24; ++o)
      for (int64_t s = 0; s < hw; ++s) {
        double acc = p[1].data[o];
        for (int64_t c = 0; c < 16; ++c) acc += p[0].data[o * 16 + c] * x[0].data[(n * 16 + c) * hw + s];
        ASSERT_NEAR(y[0].data[(n * 24 + o) * hw + s], acc, 1e-12);
      }
}

TEST(ConvInterpreter, AGroupedConvIsItsGroupsSideBySide) {
  // groups = 2 over [1, 4, 6] with weight [4, 2, 3]: output channels 0-1 see input channels 0-1 only.
  Graph g = graph_from_json(conv({1, 4, 6}, {4, 2, 3}, attrs({1}, {1}, {1}, 2), false));
  Graph half = graph_from_json(conv({1, 2, 6}, {2, 2, 3}, attrs({1}, {1}, {1}, 1), false));
  std::mt19937_64 rng(5);
  auto x = testing::random_values(g, g.inputs, rng), w = testing::random_values(g, g.params, rng);
  auto y = interpret(g, x, w)[0].data;
  for (int grp = 0; grp < 2; ++grp) {
    HostTensor xh = host({1, 2, 6}, std::vector<double>(x[0].data.begin() + grp * 12, x[0].data.begin() + grp * 12 + 12));
    HostTensor wh = host({2, 2, 3}, std::vector<double>(w[0].data.begin() + grp * 12, w[0].data.begin() + grp * 12 + 12));
    auto part = interpret(half, {xh}, {wh})[0].data;
    EXPECT_EQ(part, std::vector<double>(y.begin() + grp * 12, y.begin() + grp * 12 + 12)) << "group " << grp;
  }
}

// conv_transpose: PyTorch's size rule, its errors, a hand-computed scatter, and the identity that defines it:
// it is the adjoint of the forward convolution with the same weight, <conv(x), y> = <x, conv_transpose(y)>.
json tattrs(std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> output_padding,
            std::vector<int64_t> dilation, int64_t groups) {
  json a = attrs(stride, padding, dilation, groups);
  a["output_padding"] = output_padding;
  return a;
}

Shape transposed_shape(Shape x, Shape w, json a) {
  return graph_from_json(testing::conv_transpose(x, w, a, false)).nodes.back().type.shape;
}

TEST(ConvTransposeShape, FollowsTorch) {
  // out = (in - 1) s - 2p + d (k - 1) + output_padding + 1; channels = w[1] * groups.
  EXPECT_EQ(transposed_shape({2, 4, 17}, {4, 3, 5}, tattrs({2}, {1}, {1}, {1}, 1)), (Shape{2, 3, 36}));
  EXPECT_EQ(transposed_shape({2, 6, 9, 7}, {6, 4, 3, 3}, tattrs({2, 1}, {1, 0}, {1, 0}, {1, 1}, 1)), (Shape{2, 4, 18, 9}));
  EXPECT_EQ(transposed_shape({1, 8, 8, 9}, {8, 3, 3, 2}, tattrs({3, 2}, {2, 1}, {0, 1}, {2, 2}, 2)), (Shape{1, 6, 22, 18}));
  EXPECT_EQ(transposed_shape({2, 3, 8, 8}, {3, 5, 4, 4}, json::object()), (Shape{2, 5, 11, 11}));
  for (auto& [x, w, a, why] : std::vector<std::tuple<Shape, Shape, json, std::string>>{
           {{2, 6, 8, 8}, {4, 3, 3, 3}, json::object(), "weight dim 0 (4) must equal the input channels (6)"},
           {{2, 4, 8}, {4, 3, 3}, tattrs({2}, {0}, {2}, {1}, 1), "output_padding 2 must be smaller than the stride or the dilation"},
           {{2, 4, 5}, {4, 3, 3}, tattrs({1}, {0}, {1}, {2}, 1), "output_padding 1 not below the stride 1 (dim 0) is unsupported"},
           {{2, 4, 2}, {4, 3, 1}, tattrs({1}, {3}, {0}, {1}, 1), "the result would have extent -4"},
           {{2, 6, 8}, {6, 3, 3}, tattrs({1}, {0}, {0}, {1}, 4), "groups must be at least 1 and divide the input channels"}})
    expect_graph_error(testing::conv_transpose(x, w, a, false), why);
  json bad_bias = testing::conv_transpose({2, 3, 8, 8}, {3, 5, 3, 3}, json::object(), true);
  bad_bias["params"][1]["shape"] = {3};
  expect_graph_error(bad_bias, "conv_transpose bias [3] must be [5] (one per output channel)");
}

TEST(ConvTransposeInterpreter, HandComputed) {
  // x = [1 2 3], w = [1 10 100], stride 2: each input scatters its taps two apart; overlaps add.
  Graph g = graph_from_json(testing::conv_transpose({1, 1, 3}, {1, 1, 3}, tattrs({2}, {0}, {0}, {1}, 1), true));
  auto y = interpret(g, {host({1, 1, 3}, {1, 2, 3})}, {host({1, 1, 3}, {1, 10, 100}), host({1}, {0.5})});
  EXPECT_EQ(y[0].data, (std::vector<double>{1.5, 10.5, 102.5, 20.5, 203.5, 30.5, 300.5}));
}

TEST(ConvTransposeInterpreter, IsTheAdjointOfTheForwardConvolution) {
  std::mt19937_64 rng(9);
  int checked = 0;
  for (auto& s : testing::conv_graphs()) {
    if (s.name.rfind("conv_transpose", 0) != 0) continue;
    ++checked;
    Graph t = graph_from_json(s.graph);
    const Node& node = t.nodes.back();
    Shape x_shape = t.at(node.args[0]).type.shape, w_shape = t.at(node.args[1]).type.shape, y_shape = node.type.shape;
    json forward_attrs = node.attrs;
    forward_attrs.erase("output_padding");
    Graph f = graph_from_json(conv(y_shape, w_shape, forward_attrs, false));
    ASSERT_EQ(f.nodes.back().type.shape, x_shape) << s.name << ": the forward convolution maps the result back";
    auto x = testing::random_values(t, {t.inputs[0]}, rng)[0];
    auto w = testing::random_values(t, {t.params[0]}, rng)[0];
    auto y = testing::random_values(f, {f.inputs[0]}, rng)[0];
    std::vector<HostTensor> tparams = {w};
    if (t.params.size() == 2) tparams.push_back(HostTensor{t.at(t.params[1]).type, std::vector<double>(size_t(y_shape[1]), 0.0)});
    auto tx = interpret(t, {x}, tparams)[0], fy = interpret(f, {y}, {w})[0];
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < fy.data.size(); ++i) lhs += fy.data[i] * x.data[i];  // <conv(y), x>
    for (size_t i = 0; i < tx.data.size(); ++i) rhs += tx.data[i] * y.data[i];  // <y, conv_transpose(x)>
    EXPECT_NEAR(lhs, rhs, 1e-9 * std::max(1.0, std::fabs(lhs))) << s.name;
    EXPECT_GT(std::fabs(lhs), 1e-3) << s.name << ": a non-trivial pairing";
  }
  EXPECT_EQ(checked, 4);
}

TEST(ConvDims, MacsCountTheGroupsChannelsOnly) {
  ConvDims d = conv_dims({2, 8, 9, 10}, {12, 2, 3, 3}, attrs({1, 1}, {1, 1}, {1, 1}, 4), "");
  EXPECT_EQ(conv_macs(d), 2.0 * 12 * 9 * 10 * 2 * 9);
}

}  // namespace
}  // namespace kforge
