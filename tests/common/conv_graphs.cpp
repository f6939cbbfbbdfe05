#include "common/conv_graphs.h"

namespace kforge::testing {

using nlohmann::json;

json conv(Shape x, Shape w, json attrs, bool bias, const std::string& dtype) {
  json params = {{{"name", "w"}, {"shape", w}, {"dtype", dtype}}};
  std::vector<std::string> args = {"x", "w"};
  if (bias) {
    params.push_back({{"name", "bias"}, {"shape", {w[0]}}, {"dtype", dtype}});
    args.push_back("bias");
  }
  return {{"inputs", {{{"name", "x"}, {"shape", x}, {"dtype", dtype}}}},
          {"params", params},
          {"nodes", {{{"name", "y"}, {"op", "conv"}, {"args", args}, {"attrs", attrs}}}},
          {"outputs", {"y"}}};
}

json conv_transpose(Shape x, Shape w, json attrs, bool bias) {
  json g = conv(x, w, attrs, bias);
  g["nodes"][0]["op"] = "conv_transpose";
  if (bias) g["params"][1]["shape"] = {w[1] * attrs.value("groups", int64_t(1))};  // one per output channel
  return g;
}

std::vector<SampleGraph> conv_graphs() {
  auto a = [](std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
    return json{{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  };
  std::vector<SampleGraph> g = {
      {"conv1d", conv({2, 3, 37}, {5, 3, 4}, a({1}, {0}, {1}, 1), true)},
      {"conv1d_strided_padded", conv({2, 4, 41}, {6, 4, 5}, a({3}, {2}, {1}, 1), false)},
      {"conv2d", conv({2, 3, 13, 13}, {8, 3, 3, 3}, a({1, 1}, {1, 1}, {1, 1}, 1), true)},
      {"conv2d_no_bias", conv({2, 3, 13, 13}, {8, 3, 3, 3}, a({1, 1}, {0, 0}, {1, 1}, 1), false)},
      {"conv2d_asymmetric", conv({2, 5, 11, 19}, {7, 5, 3, 5}, a({1, 2}, {1, 2}, {1, 1}, 1), true)},
      {"conv2d_strided_dilated_padded", conv({1, 4, 23, 21}, {6, 4, 3, 3}, a({2, 3}, {3, 1}, {2, 3}, 1), true)},
      {"conv2d_grouped", conv({2, 8, 9, 10}, {12, 2, 3, 3}, a({1, 1}, {1, 1}, {1, 1}, 4), true)},
      {"conv2d_depthwise", conv({2, 6, 15, 15}, {6, 1, 5, 5}, a({1, 1}, {2, 2}, {1, 1}, 6), false)},
      // Depthwise with several partial tiles of kforge's direct kernel, strides, dilations and 49 taps.
      {"conv2d_depthwise_strided_dilated", conv({2, 3, 70, 45}, {3, 1, 3, 5}, a({2, 1}, {3, 1}, {2, 1}, 3), true)},
      {"conv2d_depthwise_7x7", conv({1, 2, 67, 70}, {2, 1, 7, 7}, a({1, 1}, {3, 3}, {1, 1}, 2), false)},
      {"conv2d_depthwise_wide_stride", conv({1, 2, 20, 75}, {2, 1, 3, 3}, a({1, 2}, {1, 2}, {1, 3}, 2), false)},
      {"conv2d_pointwise", conv({2, 16, 9, 7}, {24, 16, 1, 1}, a({1, 1}, {0, 0}, {1, 1}, 1), true)},
      {"conv3d", conv({1, 3, 7, 9, 8}, {4, 3, 3, 3, 2}, a({1, 2, 1}, {1, 1, 0}, {1, 1, 1}, 1), true)},
  };
  json relu = conv({2, 3, 13, 13}, {8, 3, 3, 3}, a({1, 1}, {1, 1}, {1, 1}, 1), true);
  relu["nodes"][0]["name"] = "c";
  relu["nodes"].push_back({{"name", "y"}, {"op", "relu"}, {"args", {"c"}}});
  g.push_back({"conv2d_bias_relu", relu});
  // A channels-last input permuted to NCHW: the step reads packed NCHW, so the view is copied first.
  json last = conv({2, 3, 9, 11}, {4, 3, 3, 3}, a({1, 1}, {1, 1}, {1, 1}, 1), false);
  last["inputs"][0]["shape"] = {2, 9, 11, 3};
  last["nodes"] = {{{"name", "xp"}, {"op", "permute"}, {"args", {"x"}}, {"attrs", {{"dims", {0, 3, 1, 2}}}}},
                   {{"name", "y"}, {"op", "conv"}, {"args", {"xp", "w"}}, {"attrs", last["nodes"][0]["attrs"]}}};
  g.push_back({"conv2d_channels_last_input", last});
  // Transposed convolutions: w is [C_in, C_out / groups, *kernel]; output_padding below the stride or dilation.
  auto t = [](std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> output_padding,
              std::vector<int64_t> dilation, int64_t groups) {
    return json{{"stride", stride}, {"padding", padding}, {"output_padding", output_padding}, {"dilation", dilation},
                {"groups", groups}};
  };
  g.push_back({"conv_transpose1d", conv_transpose({2, 4, 17}, {4, 3, 5}, t({2}, {1}, {1}, {1}, 1), true)});
  g.push_back({"conv_transpose2d", conv_transpose({2, 6, 9, 7}, {6, 4, 3, 3}, t({2, 1}, {1, 0}, {1, 0}, {1, 1}, 1), true)});
  g.push_back({"conv_transpose2d_grouped_dilated",
               conv_transpose({1, 8, 8, 9}, {8, 3, 3, 2}, t({3, 2}, {2, 1}, {0, 1}, {2, 2}, 2), false)});
  g.push_back({"conv_transpose3d", conv_transpose({1, 4, 5, 6, 4}, {4, 2, 3, 3, 3}, t({2, 2, 1}, {1, 1, 1}, {1, 0, 0}, {1, 1, 1}, 1), true)});
  return g;
}

json conv_graph(const std::string& name) { return find_graph(conv_graphs(), name); }

}  // namespace kforge::testing
