// The scalar semantics of every elementwise op, in double precision, for the CPU reference interpreter.
// Formulas follow PyTorch's definitions (torch.nn.functional docs); the generated CUDA code has its own
// float implementation in codegen/device_prelude.cpp, and the tests hold the two to the same results.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kforge {

double eval_unary(const Node& n, double x);
double eval_binary(const std::string& op, double a, double b);

}  // namespace kforge
