// Library results of a half-precision task kept in its dtype: a product or forward convolution that reads the task's
// f16 / bf16 tensors as stored (ir/half_operands.h) writes its result in that dtype too, and its readers take it
// through a cast back to f32, as they read the task's own inputs. Why: PyTorch's half-precision product writes 16
// bits, and kforge's f32 result moved twice the bytes through memory: 13_bmm_softmax's 128 x 1024 x 1024 scores
// were 512 MB written and read again where PyTorch moves 256 MB, and a convolution's result and its transpose back
// to NCHW the same. One rounding where the value crosses memory, as PyTorch rounds every op's result, so the
// function is PyTorch's own within its half-precision error (the tiers, docs/interfaces.md, are built on that).
//
// mm = matmul(a, b) : f32 becomes mm_f16 = matmul(a, b) : f16 and mm = cast(mm_f16, f32) under the old name; a cast
// of mm back to the same 16-bit dtype (a task's output) is mm_f16 itself, so a Linear that is the task's result is
// one library call writing the output. A bias epilogue reads the stored 16-bit bias (cuBLASLt's bias is the
// result's type); where the bias is computed, or the result's rows are not 16-byte multiples (the library's
// alignment), or the product is itself a graph output, the result stays f32. Convolutions keep their f32 bias
// (the transpose back adds it). Runs on primitive graphs after the epilogue folds; the views of the new 16-bit
// results are taken before their casts afterwards (codegen/half_views.h), so a reshape of a product is no copy.
#pragma once
#include "ir/graph.h"

namespace kforge {

Graph half_results(const Graph& primitive_graph);

}  // namespace kforge
