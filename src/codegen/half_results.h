// Library results of a half-precision task kept in its dtype: a product or forward convolution that PyTorch
// computes on 16-bit tensors (the importer marks it "storage_dtype": f16 or bf16, the dtype PyTorch stores its result
// in) writes its result in that dtype when the library reads its operands as stored (ir/half_operands.h), and its
// readers take it through a cast back to f32, as they read the task's own inputs. Why: PyTorch's half-precision
// product writes 16 bits, and kforge's f32 result moved twice the bytes through memory: 13_bmm_softmax's 128 x 1024 x
// 1024 scores were 512 MB written and read again where PyTorch moves 256 MB, and a convolution's result and its
// transpose back to NCHW the same. One rounding where the value crosses memory, as PyTorch rounds every op's result,
// so the function is PyTorch's own within its half-precision error (the tiers, docs/interfaces.md, are built on it).
//
// mm = matmul(a, b) : f32 becomes mm = matmul(a, b) : f16 (its name, so its group's key, kept) and mm_f32 =
// cast(mm, f32) for its readers; a cast of it back to the same dtype (a task's output) is mm itself, so a Linear
// that is the task's result is one library call writing the output. An operand computed by elementwise arithmetic
// (a softmax before a product, a GELU between two Linears) is stored in 16 bits by the kernel computing it, once
// however many products read it; through reshapes (aliases) and transposes (the library's flag) too. A bias
// epilogue reads the stored 16-bit bias (cuBLASLt's bias is the result's type); where the bias is computed, the
// result's rows are not 16-byte multiples (the library's alignment), the product is itself a graph output or its
// values reach an exp (a softmax's scores: the exponential makes a 16-bit rounding of large scores a large relative
// error), the result stays f32; where the library cannot read the operands in 16 bits, nothing is rounded. Convolutions keep
// their f32 bias (the transpose back adds it). Runs on primitive graphs after the epilogue folds; the views of the
// new 16-bit values are taken before their casts afterwards (codegen/half_views.h).
#pragma once
#include "ir/graph.h"

namespace kforge {

// `round_any`: a library operand computed by anything (a pooling, a concatenation, a parameter) is rounded too, by a
// cast kernel of its own where its producer cannot store it (codegen/half_activations.h: an f32 task's
// convolutions read and write fp16 values, where a convolution after a pooling would otherwise read f32).
Graph half_results(const Graph& primitive_graph, bool round_any = false);

}  // namespace kforge
