// The op vocabulary, by family. High-level ops follow PyTorch semantics (docs/interfaces.md); primitives
// are what decompose.cpp lowers them to and what the interpreter and code generation understand.
#pragma once
#include <string>

namespace kforge {

bool is_unary_op(const std::string& op);       // relu, gelu, ..., cast: one input, same shape
bool is_binary_op(const std::string& op);      // add, ..., pow, fmod, atan2 and the comparisons
bool is_comparison_op(const std::string& op);  // gt, lt, ge, le, eq, ne: result bool
bool is_elementwise_op(const std::string& op); // unary, binary, where, const, gather, triangle, cat
bool is_view_op(const std::string& op);        // reshape, permute, expand, flip, slice
bool is_conv_op(const std::string& op);        // conv, conv_transpose: a cuDNN step
// The cumulative ops of the graph a user writes: cumsum, cumprod, cummax, cummin, logcumsumexp; each decomposes to
// one `scan` whose kind (is_scan_kind: sum, prod, max, min, logsumexp) is its scan_kind.
bool is_scan_op(const std::string& op);
bool is_scan_kind(const std::string& kind);
std::string scan_kind(const std::string& op);
// Primitives the interpreter and the code generator accept; everything else must be decomposed first.
bool is_primitive_op(const std::string& op);

}  // namespace kforge
