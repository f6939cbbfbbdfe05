// Small convolution graphs in the forms problems use: 1-D, 2-D, 3-D, strided, dilated, padded, an asymmetric
// kernel (3x5) on a non-square input, grouped, depthwise (groups = C), pointwise (1x1), with and without a
// bias, a conv followed by a ReLU, and a conv of a permuted (channels-last) input. Shared by the IR, codegen and GPU tests; odd sizes on purpose.
#pragma once
#include <vector>

#include "common/sample_graphs.h"

namespace kforge::testing {

std::vector<SampleGraph> conv_graphs();
// The conv sample of that name (throws when there is none).
nlohmann::json conv_graph(const std::string& name);
// x [N, C, *spatial] through a conv with weight [O, C / groups, *kernel] (and a bias [O] when `bias`).
nlohmann::json conv(Shape x, Shape w, nlohmann::json attrs, bool bias, const std::string& dtype = "f32");
// One conv_transpose node: x [N, C_in, ..], w [C_in, C_out / groups, ..], bias [C_out].
nlohmann::json conv_transpose(Shape x, Shape w, nlohmann::json attrs, bool bias);

}  // namespace kforge::testing
