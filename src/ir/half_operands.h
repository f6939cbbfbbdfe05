// Products and convolutions of a half-precision task's own tensors (ir/types.h: inputs and weights stored in f16
// or bf16, each read through a cast to f32): the library reads the 16-bit values as they are stored, which is
// PyTorch's own half-precision arithmetic (tensor cores, fp32 sums), and the casts need no memory of their own.
#pragma once
#include <optional>

#include "ir/graph.h"
#include "ir/types.h"

namespace kforge {

// `a` and `b` are the stored half-precision sources of a matmul's or convolution's first two operands (its input
// and weight), `dtype` theirs (one for both). A product's operand may be read through a transpose view too, and
// every stored row must be a multiple of 8 elements (16 bytes, what the tensor cores' kernels need); a 2-D
// depthwise convolution keeps kforge's own f32 kernel, and a transposed one the search's precisions. nullopt
// elsewhere: the casts are stored and the library reads f32 as for an fp32 task.
struct HalfOperands {
  int a = -1, b = -1;
  DType dtype = DType::f16;
};
std::optional<HalfOperands> half_operands(const Graph& g, int node);

// Whether `v` is a 16-bit value that lives in memory as it is: the task's f16 / bf16 inputs and params, a library
// result kept in the task's dtype, a cast to f16 / bf16 (what codegen/half_results.h stores for a library call to
// read; partition.cpp stores it where something reads it as stored), a materialized permute of one (a tiled
// transpose's copy: codegen/half_activations.h), and a reshape of one (an alias).
bool is_stored_half(const Graph& g, int v);

// The stored half-precision value (is_stored_half) that `v` is a cast to f32 of, or -1: what a kernel reading `v`
// at computed positions (a pooling window) reads as stored, converting each element.
int half_cast_source(const Graph& g, int v);

// A matmul operand's stored matrix and whether the library reads it transposed: the transposed value under a
// transpose view; with through_half_cast, the half-precision source under `half_operands`' cast (a transpose view
// of it on either side of the cast); else the operand itself.
struct StoredOperand {
  int id = -1;
  bool transposed = false;
};
StoredOperand stored_operand(const Graph& g, int operand, bool through_half_cast);

}  // namespace kforge
