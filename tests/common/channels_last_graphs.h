// Graphs of convolution chains for the channels-last form (codegen/channels_last.h), shared by its GPU-free and GPU
// tests: two convolutions with a BatchNorm between them, a ResNet basic block, readers of every kind (a GroupNorm,
// pools, a depthwise and a transposed convolution, a 3-D one), an Inception-style concatenation, pools and
// statistics after convolutions.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/analysis.h"
#include "codegen/schedule.h"
#include "ir/types.h"

namespace kforge::testing::channels_last_graphs {

using json = nlohmann::json;

extern const json kPad1;  // padding 1 on both spatial dims
extern const json kNorm;  // a norm's eps

json chain(Shape x = {2, 5, 9, 11});
json residual();
json readers_of_every_kind();
json branches();
json pooled();
json normed_pooled();
json padded();
// Every graph above by name (chain at its default size).
std::vector<std::pair<std::string, json>> all();

// The channels-last form's schedule with every channels-last convolution's call in `precision` (nhwc), where legal.
Schedule calls_in(const GraphAnalysis& a, Precision precision, bool library_epilogue);

}  // namespace kforge::testing::channels_last_graphs
