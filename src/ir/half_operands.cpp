#include "ir/half_operands.h"

#include "ir/conv.h"
#include "ir/matmul.h"

namespace kforge {

bool is_stored_half(const Graph& g, int v) {
  const Node& n = g.at(v);
  if (!is_half(n.type.dtype)) return false;
  if (n.op == "reshape") return is_stored_half(g, n.args[0]);  // an alias of the stored value's memory
  if (n.op == "permute") return n.attrs.value("materialize", false);  // a tiled transpose's own copy
  return n.op == "input" || n.op == "param" || n.op == "matmul" || n.op == "conv" || n.op == "cast";
}

int half_cast_source(const Graph& g, int v) {
  const Node& n = g.at(v);
  if (n.op != "cast" || n.type.dtype != DType::f32) return -1;
  return is_stored_half(g, n.args[0]) ? n.args[0] : -1;
}

StoredOperand stored_operand(const Graph& g, int operand, bool through_half_cast) {
  const bool transposed = is_matrix_transpose(g, operand);
  const int v = transposed ? g.at(operand).args[0] : operand;
  if (!through_half_cast) return {v, transposed};
  if (int s = half_cast_source(g, v); s >= 0) return {s, transposed};  // transpose(cast(x)), cast(x)
  const Node& n = g.at(v);  // cast(transpose(x)): the view taken before the cast (codegen/half_views.h)
  if (!transposed && n.op == "cast" && n.type.dtype == DType::f32 && is_matrix_transpose(g, n.args[0])) {
    const int s = g.at(n.args[0]).args[0];
    if (is_stored_half(g, s)) return {s, true};
  }
  return {-1, false};
}

std::optional<HalfOperands> half_operands(const Graph& g, int node) {
  const Node& n = g.at(node);
  const bool product = n.op == "matmul";
  // Forward convolutions only: cuDNN lacks 16-bit engines for some transposed ones (backward data), which keep the
  // stored casts and the precisions the search may choose among.
  if ((!product && n.op != "conv") || n.args.size() < 2) return std::nullopt;
  HalfOperands h;
  h.a = product ? stored_operand(g, n.args[0], true).id : half_cast_source(g, n.args[0]);
  h.b = product ? stored_operand(g, n.args[1], true).id : half_cast_source(g, n.args[1]);
  if (h.a < 0 || h.b < 0 || g.at(h.a).type.dtype != g.at(h.b).type.dtype) return std::nullopt;
  h.dtype = g.at(h.a).type.dtype;
  if (product) {
    for (int s : {h.a, h.b})
      if (g.at(s).type.shape.empty() || g.at(s).type.shape.back() % 8 != 0) return std::nullopt;
  } else {
    const Node& x = g.at(n.args[0]);
    if (depthwise_2d(conv_dims(x.type.shape, g.at(n.args[1]).type.shape, n.attrs, "node '" + n.name + "': ")))
      return std::nullopt;
  }
  return h;
}

}  // namespace kforge
