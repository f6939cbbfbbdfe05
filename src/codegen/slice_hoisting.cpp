#include "codegen/slice_hoisting.h"

#include <algorithm>

#include "codegen/partition.h"
#include "ir/ops.h"

namespace kforge {

namespace {

// Whether `id` is in memory by its nature (the partition stores it whatever reads it), a constant, or a view or cast
// of such a value (a strided read of it, or a conversion where it is read).
bool in_memory(const Graph& g, int id) {
  const Node& n = g.at(id);
  if (stored_by_nature(n) || n.op == "const") return true;
  return (is_view_op(n.op) || n.op == "cast") && in_memory(g, n.args[0]);
}

// Whether every reader of `id` is a slice, and `id` no graph output: nothing else needs the whole value.
bool read_by_slices_only(const Graph& g, int id, const std::vector<std::vector<int>>& readers) {
  if (std::count(g.outputs.begin(), g.outputs.end(), id) > 0 || readers[size_t(id)].empty()) return false;
  return std::all_of(readers[size_t(id)].begin(), readers[size_t(id)].end(), [&](int r) { return g.at(r).op == "slice"; });
}

}  // namespace

Graph slices_before_elementwise(const Graph& prim) {
  const std::vector<std::vector<int>> readers = prim.readers();
  auto hoistable = [&](int id) {
    const Node& e = prim.at(id);
    if (!is_unary_op(e.op) && !is_binary_op(e.op)) return false;
    for (int a : e.args)
      if (!in_memory(prim, a) || prim.at(a).type.shape.size() > e.type.shape.size()) return false;
    return read_by_slices_only(prim, id, readers);
  };
  Graph g;
  std::vector<int> at(prim.nodes.size(), -1);  // prim's node -> g's
  for (size_t i = 0; i < prim.nodes.size(); ++i) {
    Node n = prim.nodes[i];
    const int source = n.op == "slice" ? n.args[0] : -1;
    if (source >= 0 && hoistable(source)) {
      const Node& e = prim.at(source);
      const size_t rank = e.type.shape.size(), dim = size_t(n.attr_i("dim"));
      Node hoisted = e;
      hoisted.name = n.name;
      hoisted.type = n.type;
      for (size_t k = 0; k < e.args.size(); ++k) {
        const int a = e.args[k];
        const Shape& s = prim.at(a).type.shape;
        const size_t offset = rank - s.size();  // numpy broadcasting aligns shapes on the right
        hoisted.args[k] = at[size_t(a)];
        if (dim < offset || s[dim - offset] != e.type.shape[dim]) continue;  // broadcast along the sliced dim
        Node slice = n;
        slice.name = fresh_name(n.name + "_" + prim.at(a).name, {&prim, &g});
        slice.args = {at[size_t(a)]};
        slice.attrs["dim"] = int64_t(dim - offset);
        slice.type = prim.at(a).type;
        slice.type.shape[dim - offset] = n.type.shape[dim];
        hoisted.args[k] = g.add(std::move(slice));
      }
      at[i] = g.add(std::move(hoisted));
      continue;
    }
    for (int& a : n.args)
      if (a >= 0) a = at[size_t(a)];
    at[i] = g.add(std::move(n));
  }
  copy_roles(prim, at, g);
  return g;
}

}  // namespace kforge
