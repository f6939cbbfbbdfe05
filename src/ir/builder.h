// A small helper for passes that create nodes: each call appends one typed node (its type from
// shape_rules) with a fresh name derived from the node being lowered.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kforge {

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g) : g_(g) {}
  // Names of new nodes start with this prefix (the name of the node being lowered).
  void set_prefix(const std::string& p) { prefix_ = p; counter_ = 0; }

  int op(const std::string& op, std::vector<int> args, json attrs = json::object(),
         const std::string& name = "");
  int cst(double v) { return op("const", {}, {{"value", v}, {"dtype", "f32"}}); }
  int un(const std::string& o, int x, json attrs = json::object()) { return op(o, {x}, std::move(attrs)); }
  int bin(const std::string& o, int a, int b) { return op(o, {a, b}); }
  int add(int a, int b) { return bin("add", a, b); }
  int sub(int a, int b) { return bin("sub", a, b); }
  int mul(int a, int b) { return bin("mul", a, b); }
  int div(int a, int b) { return bin("div", a, b); }
  int scale(int x, double s) { return mul(x, cst(s)); }
  // reduce with keepdim=true over sorted dims.
  int reduce(const std::string& kind, int x, std::vector<int64_t> dims);
  int reshape(int x, const Shape& s);
  const TensorType& type(int id) const { return g_.at(id).type; }
  const Graph& graph() const { return g_; }

 private:
  Graph& g_;
  std::string prefix_;
  int counter_ = 0;
};

}  // namespace kforge
