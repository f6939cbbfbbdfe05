#include "ir/pool.h"

#include <algorithm>

#include "ir/conv.h"
#include "ir/error.h"

namespace kforge {

int64_t PoolDim::end(int64_t i) const {
  return adaptive ? ((i + 1) * in + out - 1) / out : std::min(first(i) + kernel, in + padding);
}

int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

std::vector<PoolDim> pool_dims(const nlohmann::json& attrs, const Shape& x_given, const std::string& where) {
  // A channels-last pool's x [N, *spatial, C] holds the windows of [N, C, *spatial].
  const Shape x = is_channels_last(attrs) && x_given.size() >= 3 ? permuted(x_given, from_channels_last(x_given.size())) : x_given;
  auto ints = [&](const char* key, int64_t nd, int64_t fill, bool required) {
    if (!attrs.contains(key)) {
      if (required) throw UserError(where + ": attribute '" + key + "' is missing");
      return std::vector<int64_t>(size_t(nd), fill);
    }
    const nlohmann::json& v = attrs.at(key);
    if (!v.is_array() || int64_t(v.size()) != nd)
      throw UserError(where + ": '" + key + "' needs " + std::to_string(nd) + " integers, one per spatial dim");
    std::vector<int64_t> out;
    for (const auto& e : v) {
      if (!e.is_number_integer()) throw UserError(where + ": '" + key + "' needs integers");
      out.push_back(e.get<int64_t>());
    }
    return out;
  };
  if (!attrs.contains("nd") || !attrs.at("nd").is_number_integer()) throw UserError(where + ": attribute 'nd' is missing");
  const int64_t nd = attrs.at("nd").get<int64_t>();
  if (nd < 1 || nd > 3 || int64_t(x.size()) != nd + 2)
    throw UserError(where + ": expects an input [N, C, " + std::to_string(nd) + " spatial dims], got " + to_string(x));
  std::vector<PoolDim> dims(static_cast<size_t>(nd));
  if (attrs.value("adaptive", false)) {
    const std::vector<int64_t> out = ints("output", nd, 1, true);
    for (int64_t s = 0; s < nd; ++s) {
      PoolDim& d = dims[size_t(s)];
      d.adaptive = true;
      d.in = x[size_t(2 + s)];
      d.out = out[size_t(s)];
      if (d.out < 1 || d.out > d.in)
        throw UserError(where + ": adaptive pooling of a dim of " + std::to_string(d.in) + " into " +
                        std::to_string(d.out) + " (at least 1 and at most the input's size)");
      d.kernel = 0;
      for (int64_t i = 0; i < d.out; ++i) d.kernel = std::max(d.kernel, d.end(i) - d.first(i));
    }
    return dims;
  }
  const std::vector<int64_t> k = ints("kernel", nd, 1, true), st = ints("stride", nd, 1, true),
                             p = ints("padding", nd, 0, true), dil = ints("dilation", nd, 1, false);
  const bool ceil_mode = attrs.value("ceil_mode", false);
  for (int64_t s = 0; s < nd; ++s) {
    PoolDim& d = dims[size_t(s)];
    d = {x[size_t(2 + s)], 0, k[size_t(s)], st[size_t(s)], p[size_t(s)], dil[size_t(s)], false};
    if (d.kernel < 1 || d.stride < 1 || d.dilation < 1 || d.padding < 0 || 2 * d.padding > d.kernel)
      throw UserError(where + ": window parameters out of range (padding may be at most half the kernel)");
    d.out = pooled_size(d.in, d.kernel, d.stride, d.padding, d.dilation, ceil_mode);
    if (d.out < 1) throw UserError(where + ": pooling window larger than the padded input");
  }
  return dims;
}

}  // namespace kforge
