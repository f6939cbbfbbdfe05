#include "codegen/reshape_sinking.h"

#include <algorithm>

#include "ir/ops.h"

namespace kforge {

namespace {

// Whether `id` broadcasts against a value of shape `from` as against one of shape `to`, `from` reshaped: it varies
// only along trailing dims the reshape leaves as they are, so that the same element meets the same value of it (a
// Linear's bias after the product of a 3-D input, computed in 2-D and reshaped back), or is one value no wider in
// rank than either shape (every dim of one: nothing to compare).
bool broadcasts_alike(const Graph& g, int id, const Shape& from, const Shape& to) {
  const Shape& s = g.at(id).type.shape;
  if (s.size() > from.size() || s.size() > to.size()) return false;
  size_t lead = 0;
  while (lead < s.size() && s[lead] == 1) ++lead;
  for (size_t i = 0; i < s.size() - lead; ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i], v = s[s.size() - 1 - i];
    if (f != t || (v != 1 && v != f)) return false;
  }
  return true;
}

// A constant (no arguments) that an op reads after the reshape the op would move to: the bridge writes a Python
// scalar as a const just before its use (`groupnorm(x) * 0.5`).
bool movable_constant(const Graph& g, int id) { return g.at(id).op == "const" && g.at(id).args.empty(); }

// Moves argument-free node `from` to index `to` < from, every node in [to, from) one place later, and every
// index that names them with them: the order stays topological, as the node reads nothing.
void move_constant(Graph& g, int from, int to) {
  auto remap = [&](int id) { return id == from ? to : id >= to && id < from ? id + 1 : id; };
  Node moved = std::move(g.nodes[size_t(from)]);
  g.nodes.erase(g.nodes.begin() + from);
  g.nodes.insert(g.nodes.begin() + to, std::move(moved));
  for (Node& n : g.nodes)
    for (int& a : n.args)
      if (a >= 0) a = remap(a);
  for (std::vector<int>* ids : {&g.inputs, &g.params, &g.outputs})
    for (int& id : *ids) id = remap(id);
}

}  // namespace

Graph sink_reshapes(const Graph& prim) {
  Graph g = prim;
  std::vector<int> uses = g.use_counts();
  auto is_output = [&](int id) { return std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end(); };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!is_unary_op(n.op) && !is_binary_op(n.op)) continue;
    // The operand that is a sinkable reshape; every other operand one value.
    int reshape = -1, side = -1;
    for (size_t a = 0; a < n.args.size(); ++a) {
      const Node& r = g.at(n.args[a]);
      if (reshape < 0 && r.op == "reshape" && uses[n.args[a]] == 1 && !is_output(n.args[a])) {
        const Node& z = g.at(r.args[0]);
        if (z.op != "input" && z.op != "param" && z.op != "const") reshape = n.args[a], side = int(a);
      }
    }
    if (reshape < 0) continue;
    const Shape& from = g.at(g.at(reshape).args[0]).type.shape;
    // The other operands are one value each or vary along the trailing dims the reshape keeps, and are defined
    // before the reshape (whose slot the op takes), or constants that can be moved there.
    bool others_one_value = true;
    for (size_t a = 0; a < n.args.size(); ++a)
      if (int(a) != side && (!broadcasts_alike(g, n.args[a], from, n.type.shape) ||
                             (n.args[a] > reshape && !movable_constant(g, n.args[a]))))
        others_one_value = false;
    if (!others_one_value) continue;
    for (size_t a = 0; a < n.args.size(); ++a)
      if (int(a) != side && g.nodes[i].args[a] > reshape) {  // a constant: before the reshape, which moves up one
        move_constant(g, g.nodes[i].args[a], reshape);
        ++reshape;
        uses = g.use_counts();
      }
    // In place, keeping the order: the reshape's slot computes the op on its source; the op's slot (its name,
    // its readers, maybe a graph output) becomes the reshape of that. (The op stayed at i: a moved constant
    // came from before it; its arguments were renumbered in place.)
    Node op = g.nodes[i], view = g.at(reshape);
    op.name = view.name;
    op.args[size_t(side)] = view.args[0];
    op.type = {g.nodes[i].type.dtype, from};
    view.name = g.nodes[i].name;
    view.args = {reshape};
    view.type = g.nodes[i].type;
    view.attrs["shape"] = view.type.shape;  // a one-value operand of higher rank may have widened the op's shape
    g.nodes[size_t(reshape)] = std::move(op);
    g.nodes[i] = std::move(view);
  }
  return g;
}

}  // namespace kforge
