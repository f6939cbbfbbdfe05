// Tensor types of the IR: element type and static shape. Every IR value is a dense C-contiguous tensor;
// views (permute, expand, flip) exist only inside code generation, as strided accesses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

// f16 (IEEE half) and bf16 are storage types: a half-precision task's inputs and outputs are stored in them, and
// the graph reads and writes them only through `cast` (every op computes in f32, as PyTorch's half kernels do
// inside). A plan's own reduced-precision copies (codegen/emit_conv.cpp) are f16 buffers holding either pattern.
enum class DType { f32, i64, boolean, f16, bf16 };

// f16 and bf16.
bool is_half(DType d);
// f32, f16 and bf16: the floating-point storage types (what kernels move in vectors; bool and i64 are other sizes).
bool is_float(DType d);
// `x` rounded to the nearest value of dtype `d` (to nearest even; integers truncated, bools 0/1): what storing a
// computed double into a tensor of that dtype keeps (the CPU interpreter's stores).
double round_to(DType d, double x);
// The value of a stored f16 or bf16 bit pattern, and the pattern storing `x` (rounded to nearest even).
double half_value(DType d, uint16_t bits);
uint16_t half_bits(DType d, double x);

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
std::string to_string(const Shape& s);            // "[2, 3]"
// Numpy broadcasting of two shapes; throws UserError naming both when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace kforge
