#include "codegen/attention_fusion.h"

#include <algorithm>
#include <optional>
#include <set>

#include "codegen/schedule.h"
#include "ir/matmul.h"
#include "ir/ops.h"

namespace kforge {

bool attention_fits(int64_t d, int64_t dv, const TargetFacts& target) {
  KernelGroup g;
  g.kind = GroupKind::attention;
  g.attention = AttentionDims{1, 1, 1, d, dv};
  g.target = target;
  return !schedule_space(g).empty();
}

namespace {

struct Attention {
  int scores_product = -1;  // Q @ Kt
  int scores = -1;          // S, the softmax's input
  int product = -1;         // P @ V
  std::vector<int> softmax; // decompose's nodes between S and P, P included
};

struct Finder {
  const Graph& g;
  std::vector<std::vector<int>> readers;
  std::set<int> outputs;

  explicit Finder(const Graph& graph)
      : g(graph), readers(graph.readers()), outputs(graph.outputs.begin(), graph.outputs.end()) {}

  // Whether `id` is read only by `allowed` (each once) and is no graph output.
  bool read_only_by(int id, std::initializer_list<int> allowed) const {
    std::vector<int> r = readers[size_t(id)], a(allowed);
    std::sort(r.begin(), r.end()), std::sort(a.begin(), a.end());
    return r == a && !outputs.count(id);
  }

  bool reduces_last(int id, const char* kind, int x) const {
    const Node& n = g.at(id);
    const size_t rank = g.at(x).type.shape.size();
    return n.op == "reduce" && n.args[0] == x && n.attr_s("kind") == kind &&
           n.attr_ints("dims") == std::vector<int64_t>{int64_t(rank) - 1} && n.type.shape.size() == rank;
  }

  static bool plain_product(const Node& n) {
    return n.op == "matmul" && n.args.size() == 2 && n.attrs.value("epilogue", "none") == "none" && !n.has_attr("triangle");
  }

  // decompose's softmax of x along its last dim read by product `id`: div(e, sum(e)), e = exp(x - max(x)).
  std::optional<Attention> softmax_before(int id) const {
    const Node& mm = g.at(id);
    if (!plain_product(mm)) return {};
    const int p = mm.args[0];
    const Node& div = g.at(p);
    if (div.op != "div" || !read_only_by(p, {id})) return {};
    const int e = div.args[0], z = div.args[1];
    if (g.at(e).op != "exp" || !reduces_last(z, "sum", e) || !read_only_by(e, {z, p}) || !read_only_by(z, {p})) return {};
    const int shifted = g.at(e).args[0];
    const Node& sub = g.at(shifted);
    if (sub.op != "sub" || !read_only_by(shifted, {e})) return {};
    const int x = sub.args[0], m = sub.args[1];
    if (!reduces_last(m, "max", x) || !read_only_by(m, {shifted}) || !read_only_by(x, {m, shifted})) return {};
    if (g.at(x).type.dtype != DType::f32 || g.at(x).type.shape != div.type.shape) return {};
    Attention a;
    a.scores = x, a.product = id, a.softmax = {m, shifted, e, z, p};
    return a;
  }

  // The one product Q @ Kt of S's shape that S is an elementwise function of, every value between read only on
  // the way to S; -1 where there is none, or more than one.
  int scores_product(int s) const {
    const Shape& shape = g.at(s).type.shape;
    std::set<int> between, products;
    std::vector<int> stack = {s};
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      const Node& n = g.at(u);
      if (plain_product(n) && n.type.shape == shape) {
        products.insert(u);
        continue;
      }
      // gather, cat and pad read stored values at computed positions: nothing they read may be the scores'.
      if (!is_elementwise_op(n.op) || n.op == "gather" || n.op == "cat" || n.op == "pad" || n.op == "const") continue;
      if (!between.insert(u).second) continue;
      for (int a : n.args)
        if (a >= 0) stack.push_back(a);
    }
    if (products.size() != 1) return -1;
    const int qk = *products.begin();
    // The values that read the product, directly or not, up to S: of S's shape, read only by each other and S.
    std::set<int> on_path = {qk};
    for (int u : between)  // ids ascend with the order of evaluation
      if (std::any_of(g.at(u).args.begin(), g.at(u).args.end(), [&](int a) { return on_path.count(a) > 0; }))
        on_path.insert(u);
    for (int u : on_path) {
      if (u == s) continue;
      if (outputs.count(u) || g.at(u).type.shape != shape) return -1;
      for (int r : readers[size_t(u)])
        if (!on_path.count(r)) return -1;
    }
    return on_path.count(s) ? qk : -1;
  }
};

}  // namespace

Graph fuse_attention(const Graph& prim, const TargetFacts& target) {
  Finder f(prim);
  std::vector<Attention> found;
  for (size_t i = 0; i < prim.nodes.size(); ++i) {
    auto a = f.softmax_before(int(i));
    if (!a) continue;
    a->scores_product = f.scores_product(a->scores);
    if (a->scores_product < 0) continue;
    const Node &qk = prim.at(a->scores_product), &pv = prim.at(a->product);
    const Shape &q = prim.at(qk.args[0]).type.shape, &v = prim.at(pv.args[1]).type.shape;
    const Shape batch(pv.type.shape.begin(), pv.type.shape.end() - 2);
    // Q's batch dims are the result's (each block of the kernel takes one head's rows), as are S's.
    if (Shape(q.begin(), q.end() - 2) != batch || !attention_fits(q.back(), v.back(), target)) continue;
    found.push_back(*a);
  }
  if (found.empty()) return prim;
  std::set<int> dropped;
  for (const Attention& a : found) dropped.insert(a.softmax.begin(), a.softmax.end());
  Graph g;
  std::vector<int> at(prim.nodes.size(), -1);
  for (size_t i = 0; i < prim.nodes.size(); ++i) {
    if (dropped.count(int(i))) continue;
    Node n = prim.nodes[i];
    for (const Attention& a : found) {
      if (int(i) == a.scores_product) n.op = "attention_scores", n.attrs = json::object();
      if (int(i) == a.product) n.op = "attention", n.attrs = json::object(), n.args[0] = a.scores;
    }
    for (int& x : n.args)
      if (x >= 0) x = at[size_t(x)];
    at[i] = g.add(std::move(n));
  }
  copy_roles(prim, at, g);
  return g;
}

}  // namespace kforge
