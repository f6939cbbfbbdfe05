#include "ir/types.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "ir/error.h"

namespace kforge {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t nbytes(const TensorType& t) { return numel(t.shape) * int64_t(dtype_size(t.dtype)); }

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::f32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
    case DType::f16: return 2;
    case DType::bf16: return 2;
  }
  return 0;
}

std::string to_string(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

DType dtype_from_string(const std::string& s) {
  if (s == "f32") return DType::f32;
  if (s == "i64") return DType::i64;
  if (s == "bool") return DType::boolean;
  if (s == "f16") return DType::f16;
  if (s == "bf16") return DType::bf16;
  throw UserError("unknown dtype '" + s + "' (kforge supports f32, f16, bf16, i64 and bool)");
}

bool is_half(DType d) { return d == DType::f16 || d == DType::bf16; }
bool is_float(DType d) { return d == DType::f32 || is_half(d); }

double round_to(DType d, double x) {
  switch (d) {
    case DType::f32: return double(float(x));
    case DType::i64: return std::trunc(x);
    case DType::boolean: return x != 0;
    case DType::f16:
    case DType::bf16: return half_value(d, half_bits(d, x));
  }
  return x;
}

double half_value(DType d, uint16_t bits) {
  if (d == DType::bf16) return double(std::bit_cast<float>(uint32_t(bits) << 16));
  return double(std::bit_cast<_Float16>(bits));
}

uint16_t half_bits(DType d, double x) {
  if (d == DType::f16) return std::bit_cast<uint16_t>(_Float16(x));
  float f = float(x);
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40u);  // NaN stays NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // to nearest even on the upper 16 bits
}

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw UserError("shapes " + to_string(a) + " and " + to_string(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace kforge
