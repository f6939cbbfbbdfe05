// Forward convolutions: PyTorch's nn.Conv1d/2d/3d and F.conv1d/2d/3d (cross-correlation, zero padding).
//
// One op, `conv [x, w]` or `conv [x, w, bias]`: x [N, C, *spatial], w [O, C / groups, *kernel], bias [O];
// attrs stride, padding, dilation (one int per spatial dim, padding symmetric; the bridge resolves
// padding='same'/'valid' to ints) and groups. f32 only. decompose splits the bias off into an add of a
// [O, 1, ..] view, so that the primitive conv is exactly what the library step (cuDNN) computes.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/types.h"

namespace kforge {

struct ConvDims {
  int64_t n = 1, c = 1, o = 1, groups = 1;
  Shape in, kernel, out;                           // spatial extents: input, kernel, result
  std::vector<int64_t> stride, padding, dilation;  // one per spatial dim
  Shape result;                                    // [N, O, *out]
};

// Channels last (attrs.channels_last: true; codegen/channels_last.h's form, never in a graph a user writes): a
// forward convolution whose x is [N, *spatial, C], weight [O, *kernel, C / groups] and result [N, *out, O], the
// tensors cuDNN's NHWC step reads and writes without transposes. conv_dims reads such shapes as the NCHW ones
// they hold and gives the result in channels-last order.
bool is_channels_last(const nlohmann::json& conv_attrs);
// The permute dims taking [N, C, *spatial] to [N, *spatial, C], and back; `rank` counts N and C.
std::vector<int64_t> to_channels_last(size_t rank);
std::vector<int64_t> from_channels_last(size_t rank);
// A shape permuted as the `permute` op permutes: out[i] = s[dims[i]].
Shape permuted(const Shape& s, const std::vector<int64_t>& dims);

// The rules of torch's convolution; throws UserError (prefixed by `where`, naming the shapes) for a rank
// other than 3-5, channels that do not match weight and groups, attrs of the wrong length or range, or a
// (dilated) kernel larger than the padded input. Absent attrs take PyTorch's defaults (1, 0, 1, 1).
ConvDims conv_dims(const Shape& x, const Shape& w, const nlohmann::json& attrs, const std::string& where);

// A 2-D depthwise convolution (groups = channels = outputs): kforge's own direct kernel may take it.
bool depthwise_2d(const ConvDims& d);

// Multiply-adds of the convolution (the FLOPs are twice this).
double conv_macs(const ConvDims& d);

// Transposed convolutions: PyTorch's nn.ConvTranspose1d/2d/3d and F.conv_transpose1d/2d/3d (zero padding).
// One op, `conv_transpose [x, w]` or `[x, w, bias]`: x [N, C_in, *spatial], w [C_in, C_out / groups, *kernel],
// bias [C_out]; attrs stride, padding, output_padding, dilation (one int per spatial dim) and groups; the result
// has (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1 per spatial dim. It is the
// gradient of a forward convolution with respect to that convolution's input, which is how cuDNN computes it
// (backward data): `forward` is that convolution, whose input has this op's result's shape and whose output has
// this op's input's shape, with the same weight, stride, padding, dilation and groups.
struct ConvTransposeDims {
  ConvDims forward;
  std::vector<int64_t> output_padding;
  Shape result;  // [N, C_out, *spatial]
};
// Throws UserError (prefixed by `where`) as conv_dims does, and for an output_padding not below the stride or
// the dilation of its dim (PyTorch's rule) or a result extent below 1.
ConvTransposeDims conv_transpose_dims(const Shape& x, const Shape& w, const nlohmann::json& attrs, const std::string& where);

// A convolution (either kind) may carry an activation applied after its bias, attrs.activation = {"op": "relu",
// "attrs": {..}} (codegen/conv_epilogue.h folds it in; never in a graph a user writes). The activation as a
// unary node of the convolution's type reading it; nullopt when there is none.
std::optional<Node> conv_activation(const Node& conv);
// An activation in that form, {"op": .., "attrs": {..}}, as a node of type `type`; UserError when malformed.
Node activation_node(const nlohmann::json& activation, const TensorType& type);

}  // namespace kforge
