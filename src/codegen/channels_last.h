// Channels last kept across a chain of convolutions: the plan-level form Schedule::channels_last. Every forward
// convolution cuDNN runs becomes a channels-last one (ir/conv.h: x [N, *spatial, C], weight
// [O, *kernel, C / groups], result [N, *out, O]), and what lies between two of them is computed on channels-last
// values: elementwise arithmetic and concatenations (an Inception module's branches) whose result a convolution
// reads (through more of them), poolings of channels-last values, and reductions of values that exist channels-last
// only (a BatchNorm's statistics: a reduction over every dim but the innermost).
// A reader that needs the channels-first value (a graph output, a reshape, a pool, a product, an elementwise op no
// convolution reads) reads a permute of the channels-last one: a strided read in its kernel, or a copy where it
// must be stored (a library call's operand). The weights are permuted copies.
// Why: the default form transposes each channels-last convolution's input in and its result back (57-146 us a
// chain on an H100 at KernelBench's sizes); along a chain the way back of one result and the way in of the next
// convolution's input cancel, and a norm or activation between them reads and writes channels-last values.
// A half-precision task's convolutions of its own tensors (ir/half_operands.h: read as stored) are channels-last on
// their 16-bit values: those change layout in 16 bits. Left as they are: transposed convolutions and 2-D depthwise
// ones (kforge's own kernel reads NCHW).
#pragma once
#include "ir/graph.h"

namespace kforge {

// The channels-last form of a primitive graph (codegen/lower.h's primitive_graph); `primitive` itself where no
// convolution changes.
Graph channels_last_form(const Graph& primitive);

// Whether channels_last_form changes `primitive`: it has a convolution to make channels-last.
bool has_channels_last_form(const Graph& primitive);

}  // namespace kforge
