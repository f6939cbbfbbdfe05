// Tensor types of the IR: element type and static shape. Every IR value is a dense C-contiguous tensor;
// views (permute, expand, flip) exist only inside code generation, as strided accesses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

// f16 holds IEEE half or bfloat16 bit patterns in buffers a plan adds for itself (a convolution's
// reduced-precision copies, codegen/emit_conv.cpp); no graph value has it.
enum class DType { f32, i64, boolean, f16 };

using Shape = std::vector<int64_t>;

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  bool operator==(const TensorType&) const = default;
};

int64_t numel(const Shape& shape);
int64_t nbytes(const TensorType& t);  // numel times the element size
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);
size_t dtype_size(DType d);
std::string to_string(DType d);
DType dtype_from_string(const std::string& s);  // throws UserError on an unknown name
// A graph value's dtype: as dtype_from_string, but f16 (plan buffers only) is refused too.
DType value_dtype_from_string(const std::string& s);
std::string to_string(const Shape& s);            // "[2, 3]"
// Numpy broadcasting of two shapes; throws UserError naming both when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace kforge
