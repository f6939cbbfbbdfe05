#include "ir/scalar_math.h"

#include <cmath>

#include "ir/error.h"

namespace kforge {

namespace {
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x, double beta, double threshold) {
  return beta * x > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
}  // namespace

double eval_unary(const Node& n, double x) {
  const std::string& op = n.op;
  if (op == "relu") return x > 0 ? x : 0;
  if (op == "sigmoid") return sigmoid(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "abs") return std::fabs(x);
  if (op == "neg") return -x;
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1.0 / std::sqrt(x);
  if (op == "erf") return std::erf(x);
  if (op == "sin") return std::sin(x);
  if (op == "cos") return std::cos(x);
  if (op == "reciprocal") return 1.0 / x;
  if (op == "floor") return std::floor(x);
  if (op == "ceil") return std::ceil(x);
  if (op == "round") return std::nearbyint(x);  // half to even, as torch.round (the default rounding mode)
  if (op == "trunc") return std::trunc(x);
  if (op == "log1p") return std::log1p(x);
  if (op == "expm1") return std::expm1(x);
  if (op == "tan") return std::tan(x);
  if (op == "atan") return std::atan(x);
  if (op == "asin") return std::asin(x);
  if (op == "acos") return std::acos(x);
  if (op == "sinh") return std::sinh(x);
  if (op == "cosh") return std::cosh(x);
  if (op == "square") return x * x;
  if (op == "sign") return double((x > 0) - (x < 0));
  if (op == "silu") return x * sigmoid(x);
  if (op == "softsign") return x / (1.0 + std::fabs(x));
  if (op == "selu") return kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x));
  if (op == "hardsigmoid") return std::fmin(std::fmax(x / 6.0 + 0.5, 0.0), 1.0);
  if (op == "hardswish") return x * std::fmin(std::fmax(x + 3.0, 0.0), 6.0) / 6.0;
  if (op == "mish") return x * std::tanh(softplus(x, 1.0, 20.0));
  if (op == "gelu") {
    if (n.attrs.value("approximate", "none") == "tanh")
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  }
  if (op == "leaky_relu") return x > 0 ? x : x * n.attr_f("negative_slope");
  if (op == "elu") return x > 0 ? x : n.attr_f("alpha") * std::expm1(x);
  if (op == "hardtanh") return std::fmin(std::fmax(x, n.attr_f("min_val")), n.attr_f("max_val"));
  if (op == "softplus") return softplus(x, n.attr_f("beta"), n.attr_f("threshold"));
  if (op == "clamp") {
    if (auto lo = n.attr_opt_f("min")) x = std::fmax(x, *lo);
    if (auto hi = n.attr_opt_f("max")) x = std::fmin(x, *hi);
    return x;
  }
  if (op == "pow_scalar") return std::pow(x, n.attr_f("exponent"));
  if (op == "cast") return x;  // the interpreter stores every value as double; storage casts on output
  throw InternalError("eval_unary: no semantics for '" + op + "'");
}

double eval_binary(const std::string& op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "maximum") return std::fmax(a, b);
  if (op == "minimum") return std::fmin(a, b);
  if (op == "pow") return std::pow(a, b);
  if (op == "fmod") return std::fmod(a, b);
  if (op == "atan2") return std::atan2(a, b);
  if (op == "gt") return a > b;
  if (op == "lt") return a < b;
  if (op == "ge") return a >= b;
  if (op == "le") return a <= b;
  if (op == "eq") return a == b;
  if (op == "ne") return a != b;
  throw InternalError("eval_binary: no semantics for '" + op + "'");
}

}  // namespace kforge
