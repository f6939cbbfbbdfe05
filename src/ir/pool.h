// Pooling windows: ops max_pool, avg_pool (as imported) and pool (decomposed, attrs.kind "max" | "avg"), x
// [N, C, *spatial] with attrs nd (1-3 spatial dims) and either
//   kernel, stride, padding (symmetric), dilation (max only), per spatial dim; ceil_mode (optional, false): the
//   output size rounded up as PyTorch's ceil_mode does, the last window starting inside the input or its left
//   padding; count_include_pad (avg): the divisor is the window clipped to the padded input, else its elements
//   inside the input;
// or adaptive: true with output (one size per spatial dim): PyTorch's adaptive pooling, output i of a dim of n into
//   m spanning [floor(i * n / m), ceil((i + 1) * n / m)), its divisor that width. The importer keeps windows of one
//   width as the fixed form (kernel = stride = n / m) and gives this one only windows of unequal widths.
// With channels_last: true (codegen/channels_last.h's form, never in a graph a user writes) x is [N, *spatial, C]
// and the result [N, *out, C]. The interpreter and the pooling kernel (codegen/emit_pool.cpp) walk the same
// windows through PoolDim.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kforge {

// One spatial dim of a pooling: output i's window and its taps. A tap w (0 <= w < kernel) is at position
// first(i) + w * dilation and is read only where inside(i, position).
struct PoolDim {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, padding = 0, dilation = 1;
  bool adaptive = false;  // kernel: the widest window

  int64_t first(int64_t i) const { return adaptive ? i * in / out : i * stride - padding; }
  // One past the window's last position, the padding counted: average pooling's count_include_pad divisor.
  int64_t end(int64_t i) const;
  bool inside(int64_t i, int64_t position) const { return position >= 0 && position < (adaptive ? end(i) : in); }
};

// The spatial dims of pooling node `n` over an input of shape `x`, its output sizes included. Throws UserError
// (prefixed by `where`) for attrs missing, of the wrong length or out of range, or a window larger than the
// padded input.
std::vector<PoolDim> pool_dims(const nlohmann::json& attrs, const Shape& x, const std::string& where);

// Output spatial size of a fixed window: floor((in + 2p - d(k-1) - 1) / s) + 1, rounded up under ceil_mode as
// ATen's pooling_output_shape does (a last window that would start in the right padding is dropped).
int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode = false);

}  // namespace kforge
