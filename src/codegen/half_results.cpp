#include "codegen/half_results.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/half_operands.h"
#include "ir/matmul.h"
#include "ir/ops.h"

namespace kforge {

namespace {

// The one half-precision dtype of every floating-point input and param of a task; nullopt for an f32 task or a
// mixed one (where PyTorch computes in f32 on its f32 tensors, nothing is rounded).
std::optional<DType> task_dtype(const Graph& g) {
  std::set<DType> floats;
  for (const auto* ids : {&g.inputs, &g.params})
    for (int id : *ids)
      if (const DType d = g.at(id).type.dtype; d == DType::f32 || is_half(d)) floats.insert(d);
  return floats.size() == 1 && is_half(*floats.begin()) ? std::optional<DType>(*floats.begin()) : std::nullopt;
}

// The stored 16-bit tensor of dtype `d` a product's bias reads (a cast to f32 of it, or of a reshape of it: the
// same contiguous values), or -1.
int stored_bias(const Graph& g, int bias, DType d) {
  const Node& n = g.at(bias);
  if (n.op != "cast" || n.type.dtype != DType::f32) return -1;
  int s = n.args[0];
  while (g.at(s).op == "reshape") s = g.at(s).args[0];
  return g.at(s).type.dtype == d && is_stored_half(g, s) ? s : -1;
}

class Rewrite {
 public:
  Rewrite(const Graph& prim, DType d) : prim_(prim), d_(d) {}

  Graph run() {
    for (size_t i = 0; i < prim_.nodes.size(); ++i) {
      Node n = prim_.nodes[i];
      for (int& a : n.args)
        if (a >= 0) a = at_[size_t(a)];
      const bool output = std::count(prim_.outputs.begin(), prim_.outputs.end(), int(i)) > 0;
      at_.push_back(-1);
      if (int r = narrowed(n, output); r >= 0) {
        at_[i] = r;
        continue;
      }
      if ((n.op == "matmul" || n.op == "conv") && n.type.dtype == DType::f32) {
        at_[i] = library(std::move(n), output);
        continue;
      }
      at_[i] = g_.add(std::move(n));
    }
    for (int id : prim_.inputs) g_.inputs.push_back(at_[size_t(id)]);
    for (int id : prim_.params) g_.params.push_back(at_[size_t(id)]);
    for (int id : prim_.outputs) g_.outputs.push_back(at_[size_t(id)]);
    return std::move(g_);
  }

 private:
  // cast(cast(r, f32), d) of a 16-bit result r is r: both casts are exact. Not where r already is an output (two
  // outputs would share its memory).
  int narrowed(const Node& n, bool output) {
    if (n.op != "cast" || n.args.empty()) return -1;
    auto w = widened_.find(n.args[0]);
    if (w == widened_.end() || g_.at(w->second).type.dtype != n.type.dtype) return -1;
    if (output && !outputs_.insert(w->second).second) return -1;
    return w->second;
  }

  std::string name_for(const std::string& base) const { return fresh_name(base, {&prim_, &g_}); }

  int add_cast(int x, DType to, const std::string& name) {
    Node c{.name = name, .op = "cast", .args = {x}, .attrs = {{"dtype", to_string(to)}}, .type = {to, g_.at(x).type.shape}};
    return g_.add(std::move(c));
  }

  // An f32 operand computed by elementwise arithmetic, or a permuted, sliced, expanded or flipped view (which the
  // library needs stored contiguous: a kernel copies it), as cast(cast(x, d), f32): the kernel computing or copying
  // it stores the 16 bits the library reads. A transpose view of one is taken of the rounded value. A reshape is
  // left alone: of a stored value it is an alias, no copy. Else `operand` unchanged.
  int rounded_operand(int operand, bool product) {
    const bool transposed = product && is_matrix_transpose(g_, operand);
    const int x = transposed ? g_.at(operand).args[0] : operand;
    const Node& n = g_.at(x);
    if (n.type.dtype != DType::f32 || !(is_elementwise_op(n.op) || (is_view_op(n.op) && n.op != "reshape")) || half_cast_source(g_, x) >= 0 ||
        stored_operand(g_, operand, true).id >= 0)
      return operand;
    const std::string name = n.name;
    const int wide = add_cast(add_cast(x, d_, name_for(name + "_" + to_string(d_))), DType::f32, name_for(name + "_rounded"));
    if (!transposed) return wide;
    Node view = g_.at(operand);
    view.name = name_for(view.name + "_rounded");
    view.args[0] = wide;
    return g_.add(std::move(view));
  }

  int library(Node n, bool output) {
    const size_t mark = g_.nodes.size();
    const std::vector<int> original = n.args;
    const bool product = n.op == "matmul";
    for (size_t j = 0; j < 2 && j < n.args.size(); ++j) n.args[j] = rounded_operand(n.args[j], product);
    const std::string name = n.name;
    int id = g_.add(n);
    const auto h = half_operands(g_, id);
    if (!h || h->dtype != d_) {  // the library reads f32 here: no operand rounded for it
      g_.nodes.resize(mark);
      n.args = original;
      return g_.add(std::move(n));
    }
    Node& r = g_.nodes[size_t(id)];
    if (output) return id;
    if (product) {
      if (r.type.shape.back() % 8 != 0) return id;  // 16-byte rows: cuBLAS's tensor-core alignment
      if (r.args.size() > 2) {
        const int bias = stored_bias(g_, r.args[2], d_);
        if (bias < 0) return id;
        r.args[2] = bias;
      }
    }
    r.type.dtype = d_;  // keeps its name, and so its group's key: a schedule names the same group either way
    const int wide = add_cast(id, DType::f32, name_for(name + "_f32"));
    widened_[wide] = id;
    return wide;
  }

  const Graph& prim_;
  const DType d_;
  Graph g_;
  std::vector<int> at_;          // prim's node -> g's value of the same function (f32 where it was)
  std::map<int, int> widened_;   // g's cast to f32 -> the 16-bit result it reads
  std::set<int> outputs_;        // 16-bit results that became graph outputs
};

}  // namespace

Graph half_results(const Graph& prim) {
  const auto d = task_dtype(prim);
  return d ? Rewrite(prim, *d).run() : prim;
}

}  // namespace kforge
