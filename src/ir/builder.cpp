#include "ir/builder.h"

#include "ir/shape_rules.h"

namespace kforge {

int GraphBuilder::op(const std::string& o, std::vector<int> args, json attrs, const std::string& name) {
  Node n;
  n.name = name.empty() ? prefix_ + "." + o + std::to_string(counter_++) : name;
  n.op = o;
  n.args = std::move(args);
  n.attrs = std::move(attrs);
  n.type = infer_type(g_, n);
  return g_.add(std::move(n));
}

int GraphBuilder::reduce(const std::string& kind, int x, std::vector<int64_t> dims) {
  if (dims.empty())
    for (size_t i = 0; i < type(x).shape.size(); ++i) dims.push_back(int64_t(i));
  return op("reduce", {x}, {{"kind", kind}, {"dims", dims}, {"keepdim", true}});
}

int GraphBuilder::reshape(int x, const Shape& s) {
  if (type(x).shape == s) return x;
  return op("reshape", {x}, {{"shape", s}});
}

}  // namespace kforge
