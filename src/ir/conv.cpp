#include "ir/conv.h"

#include "ir/error.h"

namespace kforge {

namespace {
std::vector<int64_t> per_dim(const nlohmann::json& attrs, const char* key, size_t nd, int64_t dflt,
                             const std::string& where) {
  if (!attrs.is_object() || !attrs.contains(key)) return std::vector<int64_t>(nd, dflt);
  const auto& v = attrs.at(key);
  if (v.is_number_integer()) return std::vector<int64_t>(nd, v.get<int64_t>());
  if (!v.is_array() || v.size() != nd)
    throw UserError(where + "conv " + key + " " + v.dump() + " must hold one int per spatial dim (" +
                    std::to_string(nd) + ")");
  return v.get<std::vector<int64_t>>();
}
}  // namespace

bool is_channels_last(const nlohmann::json& attrs) { return attrs.is_object() && attrs.value("channels_last", false); }

std::vector<int64_t> to_channels_last(size_t rank) {
  std::vector<int64_t> dims = {0};
  for (size_t i = 2; i < rank; ++i) dims.push_back(int64_t(i));
  if (rank > 1) dims.push_back(1);
  return dims;
}

std::vector<int64_t> from_channels_last(size_t rank) {
  std::vector<int64_t> dims = {0};
  if (rank > 1) dims.push_back(int64_t(rank) - 1);
  for (size_t i = 1; i + 1 < rank; ++i) dims.push_back(int64_t(i));
  return dims;
}

Shape permuted(const Shape& s, const std::vector<int64_t>& dims) {
  Shape out;
  for (int64_t d : dims) out.push_back(s.at(size_t(d)));
  return out;
}

ConvDims conv_dims(const Shape& x_given, const Shape& w_given, const nlohmann::json& attrs, const std::string& where) {
  const bool last = is_channels_last(attrs);
  if (last && (x_given.size() < 3 || w_given.size() != x_given.size()))
    throw UserError(where + "channels-last conv of input " + to_string(x_given) + " with weight " + to_string(w_given) +
                    ": input and weight must be [N, *spatial, C] and [O, *kernel, C / groups]");
  const Shape x = last ? permuted(x_given, from_channels_last(x_given.size())) : x_given;
  const Shape w = last ? permuted(w_given, from_channels_last(w_given.size())) : w_given;
  auto fail = [&](const std::string& why) -> void {
    throw UserError(where + "conv of input " + to_string(x) + " with weight " + to_string(w) + ": " + why);
  };
  if (x.size() < 3 || x.size() > 5)
    fail("input must be [N, C, *spatial] with 1 to 3 spatial dims (unbatched inputs are not supported)");
  if (w.size() != x.size()) fail("weight must have the input's rank, [O, C / groups, *kernel]");
  size_t nd = x.size() - 2;
  ConvDims d;
  d.n = x[0];
  d.c = x[1];
  d.o = w[0];
  d.groups = attrs.is_object() ? attrs.value("groups", int64_t(1)) : 1;
  d.stride = per_dim(attrs, "stride", nd, 1, where);
  d.padding = per_dim(attrs, "padding", nd, 0, where);
  d.dilation = per_dim(attrs, "dilation", nd, 1, where);
  if (d.groups < 1) fail("groups must be at least 1, got " + std::to_string(d.groups));
  if (d.c % d.groups || d.o % d.groups)
    fail("groups " + std::to_string(d.groups) + " must divide both the input channels (" + std::to_string(d.c) +
         ") and the output channels (" + std::to_string(d.o) + ")");
  if (w[1] * d.groups != d.c)
    fail("weight dim 1 (" + std::to_string(w[1]) + ") times groups (" + std::to_string(d.groups) +
         ") must equal the input channels (" + std::to_string(d.c) + ")");
  d.result = {d.n, d.o};
  for (size_t i = 0; i < nd; ++i) {
    if (d.stride[i] < 1 || d.dilation[i] < 1 || d.padding[i] < 0)
      fail("stride and dilation must be at least 1 and padding at least 0 (dim " + std::to_string(i) + ")");
    int64_t span = d.dilation[i] * (w[i + 2] - 1) + 1, padded = x[i + 2] + 2 * d.padding[i];
    if (w[i + 2] < 1 || span > padded)
      fail("kernel extent " + std::to_string(span) + " (dilated) exceeds the padded input extent " +
           std::to_string(padded) + " in spatial dim " + std::to_string(i));
    d.in.push_back(x[i + 2]);
    d.kernel.push_back(w[i + 2]);
    d.out.push_back((padded - span) / d.stride[i] + 1);
    d.result.push_back(d.out.back());
  }
  if (last) d.result = permuted(d.result, to_channels_last(d.result.size()));
  return d;
}

ConvTransposeDims conv_transpose_dims(const Shape& x, const Shape& w, const nlohmann::json& attrs, const std::string& where) {
  auto fail = [&](const std::string& why) {
    throw UserError(where + "conv_transpose of input " + to_string(x) + " with weight " + to_string(w) + ": " + why);
  };
  if (x.size() < 3 || x.size() > 5)
    fail("input must be [N, C, *spatial] with 1 to 3 spatial dims (unbatched inputs are not supported)");
  if (w.size() != x.size()) fail("weight must have the input's rank, [C_in, C_out / groups, *kernel]");
  if (w[0] != x[1]) fail("weight dim 0 (" + std::to_string(w[0]) + ") must equal the input channels (" + std::to_string(x[1]) + ")");
  size_t nd = x.size() - 2;
  int64_t groups = attrs.is_object() ? attrs.value("groups", int64_t(1)) : 1;
  auto stride = per_dim(attrs, "stride", nd, 1, where), padding = per_dim(attrs, "padding", nd, 0, where);
  auto dilation = per_dim(attrs, "dilation", nd, 1, where), extra = per_dim(attrs, "output_padding", nd, 0, where);
  if (groups < 1 || x[1] % groups) fail("groups must be at least 1 and divide the input channels");
  Shape forward_input = {x[0], w[1] * groups};
  for (size_t i = 0; i < nd; ++i) {
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0 || extra[i] < 0)
      fail("stride and dilation must be at least 1, padding and output_padding at least 0 (dim " + std::to_string(i) + ")");
    if (extra[i] >= stride[i] && extra[i] >= dilation[i])
      fail("output_padding " + std::to_string(extra[i]) + " must be smaller than the stride or the dilation (dim " +
           std::to_string(i) + ")");
    // PyTorch also takes an output_padding below the dilation but not below the stride; the forward convolution
    // of that result would have a longer output than this op's input, so it is not this op's cuDNN form.
    if (extra[i] >= stride[i])
      fail("output_padding " + std::to_string(extra[i]) + " not below the stride " + std::to_string(stride[i]) +
           " (dim " + std::to_string(i) + ") is unsupported");
    int64_t out = (x[i + 2] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w[i + 2] - 1) + extra[i] + 1;
    if (out < 1) fail("the result would have extent " + std::to_string(out) + " in spatial dim " + std::to_string(i));
    forward_input.push_back(out);
  }
  nlohmann::json forward_attrs = {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  ConvTransposeDims t{conv_dims(forward_input, w, forward_attrs, where), extra, forward_input};
  KF_ASSERT(t.forward.result == x, "conv_transpose: the forward convolution's output " + to_string(t.forward.result) +
                                       " is not the input " + to_string(x));
  return t;
}

bool depthwise_2d(const ConvDims& d) { return d.in.size() == 2 && d.groups == d.c && d.o == d.c; }

double conv_macs(const ConvDims& d) {
  return double(numel(d.result)) * double(d.c / d.groups) * double(numel(d.kernel));
}

Node activation_node(const json& a, const TensorType& type) {
  if (!a.is_object() || !a.contains("op") || !a.at("op").is_string() || !a.value("attrs", json::object()).is_object())
    throw UserError("a convolution's activation must be {\"op\": name, \"attrs\": {..}}, not " + a.dump());
  Node n;
  n.op = a.at("op").get<std::string>();
  n.attrs = a.value("attrs", json::object());
  n.type = type;
  return n;
}

std::optional<Node> conv_activation(const Node& conv) {
  if (!conv.has_attr("activation")) return std::nullopt;
  Node n = activation_node(conv.attrs.at("activation"), conv.type);
  n.name = conv.name;
  return n;
}

}  // namespace kforge
