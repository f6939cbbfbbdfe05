// The channels-last form with fp16 between convolutions (Schedule::half_activations): every channels-last forward
// convolution of f32 tensors (codegen/channels_last.h) reads fp16 operands and writes an fp16 result, as
// codegen/half_results.h does for a half-precision task's own products: the kernel computing a convolution's input
// (a norm's arithmetic and activation, a residual sum) stores it in fp16, readers take the result through a cast,
// and the library reads and writes the graph's tensors as they are, with no copies around the call.
// Why: an fp16 convolution of f32 tensors rounded its input in a copy of its own and widened its result in another,
// and the norm between two of them read and wrote f32: on a VGG-like chain with BatchNorm about 36 bytes an element
// of each convolution's result crossed memory, where this form moves about 10 (the result written and read in 16
// bits, the statistics' and the norm's reads, the next input written in 16 bits).
// A max pool between a norm and the next convolution pools the norm's fp16 rounding (the same values: the rounded
// maximum is the maximum of the rounded values), and an input or weight transposed into channels last only for its
// rounding is rounded before a 16-bit transpose (or read strided where small).
// Numerically it is the fp16 convolution's own arithmetic (the same roundings of the input and the result): a plan of
// the relaxed tier; the search measures it as it measures the fp16 precision.
#pragma once
#include "ir/graph.h"

namespace kforge {

// `channels_last_form` (channels_last_form's output) with its channels-last convolutions in fp16.
Graph half_activations_form(const Graph& channels_last_form);

}  // namespace kforge
