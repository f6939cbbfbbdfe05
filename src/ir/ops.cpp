#include "ir/ops.h"

#include <map>
#include <set>

namespace kforge {

namespace {
const std::set<std::string> kUnary = {
    "relu", "sigmoid", "tanh", "exp", "log", "abs", "neg", "sqrt", "rsqrt", "erf", "sin", "cos",
    "reciprocal", "sign", "silu", "softsign", "selu", "hardsigmoid", "hardswish", "mish", "gelu",
    "leaky_relu", "elu", "hardtanh", "softplus", "clamp", "pow_scalar", "cast", "square",
    "floor", "ceil", "round", "trunc", "log1p", "expm1", "tan", "atan", "asin", "acos", "sinh", "cosh"};
const std::set<std::string> kComparison = {"gt", "lt", "ge", "le", "eq", "ne"};
const std::set<std::string> kBinary = {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "fmod", "atan2",
                                       "gt", "lt", "ge", "le", "eq", "ne"};
const std::set<std::string> kView = {"reshape", "permute", "expand", "flip", "slice"};
const std::map<std::string, std::string> kScanKind = {
    {"cumsum", "sum"}, {"cumprod", "prod"}, {"cummax", "max"}, {"cummin", "min"}, {"logcumsumexp", "logsumexp"}};
}  // namespace

bool is_scan_op(const std::string& op) { return kScanKind.count(op) > 0; }
bool is_scan_kind(const std::string& kind) {
  for (auto& [op, k] : kScanKind)
    if (k == kind) return true;
  return false;
}
std::string scan_kind(const std::string& op) { return kScanKind.at(op); }

bool is_unary_op(const std::string& op) { return kUnary.count(op) > 0; }
bool is_binary_op(const std::string& op) { return kBinary.count(op) > 0; }
bool is_comparison_op(const std::string& op) { return kComparison.count(op) > 0; }
bool is_elementwise_op(const std::string& op) {
  return is_unary_op(op) || is_binary_op(op) || op == "where" || op == "const" || op == "gather" || op == "triangle" ||
         op == "cat" || op == "pad";
}
bool is_view_op(const std::string& op) { return kView.count(op) > 0; }
bool is_conv_op(const std::string& op) { return op == "conv" || op == "conv_transpose"; }
bool is_primitive_op(const std::string& op) {
  return op == "input" || op == "param" || is_elementwise_op(op) || is_view_op(op) ||
         op == "reduce" || op == "scan" || op == "pool" || op == "matmul" || is_conv_op(op) || op == "recurrence" ||
         op == "attention_scores" || op == "attention";
}

}  // namespace kforge
