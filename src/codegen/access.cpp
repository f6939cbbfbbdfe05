#include "codegen/access.h"

#include "ir/error.h"
#include "ir/ops.h"

namespace kforge {

bool Access::contiguous() const { return offset == 0 && strides == contiguous_strides(shape); }

bool squeezes_only(const Graph& g, const Node& n) {
  auto kept = [](const Shape& s) {
    Shape k;
    for (int64_t d : s)
      if (d != 1) k.push_back(d);
    return k;
  };
  return n.op == "reshape" && kept(n.type.shape) == kept(g.at(n.args[0]).type.shape);
}

bool is_readable(const Partition& p, int id) {
  const Node& n = p.graph->at(id);
  if (p.stored[id]) return true;
  return is_view_op(n.op) && (n.op != "reshape" || squeezes_only(*p.graph, n)) && is_readable(p, n.args[0]);
}

Access access_of(const Partition& p, int id, bool through_self) {
  const Graph& g = *p.graph;
  const Node& n = g.at(id);
  if (p.stored[id] && !(through_self && is_view_op(n.op) && n.op != "reshape")) {
    Access a;
    a.owner = p.storage[id];
    a.shape = n.type.shape;
    a.strides = contiguous_strides(a.shape);
    return a;
  }
  KF_ASSERT(is_view_op(n.op) && (n.op != "reshape" || squeezes_only(g, n)),
            "access_of: '" + n.name + "' is neither stored nor a view");
  Access src = access_of(p, n.args[0]);
  Access a = src;
  a.shape = n.type.shape;
  if (n.op == "reshape") {  // dims of one dropped or added: the others keep their strides, in order
    std::vector<int64_t> kept;
    for (size_t i = 0; i < src.shape.size(); ++i)
      if (src.shape[i] != 1) kept.push_back(src.strides[i]);
    a.strides.assign(a.shape.size(), 0);
    for (size_t i = 0, k = 0; i < a.shape.size(); ++i)
      if (a.shape[i] != 1) a.strides[i] = kept[k++];
  } else if (n.op == "permute") {
    auto dims = n.attr_ints("dims");
    for (size_t i = 0; i < dims.size(); ++i) a.strides[i] = src.strides[dims[i]];
  } else if (n.op == "expand") {
    a.strides.assign(a.shape.size(), 0);
    size_t off = a.shape.size() - src.shape.size();
    for (size_t i = 0; i < src.shape.size(); ++i)
      a.strides[off + i] = src.shape[i] == 1 ? 0 : src.strides[i];
  } else if (n.op == "slice") {
    const size_t d = size_t(n.attr_i("dim"));
    a.offset += n.attr_i("start") * src.strides[d];
    a.strides[d] = src.strides[d] * n.attr_i("step");
  } else if (n.op == "flip") {
    for (auto d : n.attr_ints("dims")) {
      a.offset += (a.shape[d] - 1) * a.strides[d];
      a.strides[d] = -a.strides[d];
    }
  }
  return a;
}

}  // namespace kforge
