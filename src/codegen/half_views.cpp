#include "codegen/half_views.h"

#include <map>

#include "ir/half_operands.h"
#include "ir/ops.h"

namespace kforge {

Graph views_before_half_casts(const Graph& prim) {
  Graph g;
  std::vector<int> at(prim.nodes.size(), -1);  // prim's node -> g's
  std::map<int, int> stored_under;             // g's cast to f32 -> the stored half-precision value it reads
  for (size_t i = 0; i < prim.nodes.size(); ++i) {
    Node n = prim.nodes[i];
    for (int& a : n.args)
      if (a >= 0) a = at[size_t(a)];
    auto half_cast = is_view_op(n.op) && !n.args.empty() ? stored_under.find(n.args[0]) : stored_under.end();
    if (half_cast != stored_under.end()) {
      Node view = n;
      view.name = fresh_name(n.name + "_" + to_string(g.at(half_cast->second).type.dtype), {&prim, &g});
      view.args[0] = half_cast->second;
      view.type.dtype = g.at(half_cast->second).type.dtype;
      const int v = g.add(std::move(view));
      Node cast{.name = n.name, .op = "cast", .args = {v}, .attrs = {{"dtype", "f32"}}, .type = n.type};
      at[i] = g.add(std::move(cast));
      stored_under[at[i]] = v;
      continue;
    }
    const bool reads_storage = n.op == "cast" && n.type.dtype == DType::f32 && !n.args.empty() &&
                               is_half(g.at(n.args[0]).type.dtype) &&
                               (is_stored_half(g, n.args[0]) || is_view_op(g.at(n.args[0]).op));
    at[i] = g.add(std::move(n));
    if (reads_storage) stored_under[at[i]] = g.at(at[i]).args[0];
  }
  copy_roles(prim, at, g);
  return g;
}

}  // namespace kforge
