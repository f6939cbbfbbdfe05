#include "ir/attention.h"

#include "ir/error.h"
#include "ir/ops.h"

namespace kforge {

bool is_attention_op(const std::string& op) { return op == "attention_scores" || op == "attention"; }

MatmulDims attention_dims(const Graph& g, const Node& n) {
  const std::string where = "node '" + n.name + "' (" + n.op + "): ";
  if (n.args.size() != 2) throw UserError(where + "takes two arguments, got " + std::to_string(n.args.size()));
  const TensorType &a = g.at(n.args[0]).type, &b = g.at(n.args[1]).type;
  if (a.dtype != DType::f32 || b.dtype != DType::f32) throw UserError(where + "computes on f32 values");
  if (a.shape.size() < 2 || a.shape.size() != b.shape.size())
    throw UserError(where + "operands " + to_string(a.shape) + " and " + to_string(b.shape) +
                    " must have the same rank, at least 2");
  MatmulDims d = matmul_dims(a.shape, b.shape, where);
  const Shape batch_a(a.shape.begin(), a.shape.end() - 2);
  if (batch_a != d.batch) throw UserError(where + "the first operand's batch dims must be the result's");
  return d;
}

int scores_product_of(const Graph& g, const Node& n) {
  std::vector<int> stack = {n.args.at(0)};
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    const Node& x = g.at(u);
    if (x.op == "attention_scores") return u;
    if (is_elementwise_op(x.op))
      for (int a : x.args)
        if (a >= 0) stack.push_back(a);
  }
  throw UserError("node '" + n.name + "' (attention): its scores are no elementwise function of an attention_scores node");
}

AttentionDims attention_geometry(const Graph& g, const Node& n) {
  const MatmulDims pv = attention_dims(g, n), qk = attention_dims(g, g.at(scores_product_of(g, n)));
  AttentionDims d;
  d.heads = numel(pv.batch), d.rows = pv.m, d.keys = pv.k, d.head = qk.k, d.value_head = pv.n;
  if (qk.m != pv.m || qk.n != pv.k)
    throw UserError("node '" + n.name + "' (attention): its scores' product gives [" + std::to_string(qk.m) + ", " +
                    std::to_string(qk.n) + "] a head, its scores are [" + std::to_string(pv.m) + ", " + std::to_string(pv.k) + "]");
  return d;
}

}  // namespace kforge
