#include "codegen/half_results.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/half_operands.h"
#include "ir/matmul.h"
#include "ir/ops.h"

namespace kforge {

namespace {

// The stored 16-bit tensor of dtype `d` a product's bias is a cast of (a reshape of a stored one too: an alias of the
// same contiguous values), or -1.
int stored_bias(const Graph& g, int bias, DType d) {
  const int s = half_cast_source(g, bias);
  return s >= 0 && g.at(s).type.dtype == d ? s : -1;
}

class Rewrite {
 public:
  Rewrite(const Graph& prim, bool round_any) : prim_(prim), round_any_(round_any) {}

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
      const std::string storage = n.attrs.value("storage_dtype", "");
      if ((n.op == "matmul" || n.op == "conv") && n.type.dtype == DType::f32 && (storage == "f16" || storage == "bf16") &&
          !exponentiated(int(i))) {
        at_[i] = library(std::move(n), output, dtype_from_string(storage));
        continue;
      }
      at_[i] = g_.add(std::move(n));
    }
    copy_roles(prim_, at_, g_);
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

  // Whether node `id`'s values reach an exp through elementwise arithmetic (a softmax's scores, a logsumexp's):
  // the exponential turns an absolute rounding into a relative error, and 16-bit scores of magnitude 2000 are 2
  // apart, a factor e between two probabilities (13_bmm_softmax_scale on inputs of 4x scale missed 1e-2 on
  // 1126 of 134M elements). Such a result stays f32.
  bool exponentiated(int id) {
    if (readers_.empty()) readers_ = prim_.readers(), exponentiated_.assign(prim_.nodes.size(), -1);
    int& known = exponentiated_[size_t(id)];
    if (known < 0) {
      known = 0;
      for (int r : readers_[size_t(id)]) {
        const Node& n = prim_.at(r);
        if (n.op == "exp" || ((is_elementwise_op(n.op) || is_view_op(n.op)) && exponentiated(r))) known = 1;
      }
    }
    return known == 1;
  }

  std::string name_for(const std::string& base) const { return fresh_name(base, {&prim_, &g_}); }

  int add_cast(int x, DType to, const std::string& name) {
    Node c{.name = name, .op = "cast", .args = {x}, .attrs = {{"dtype", to_string(to)}}, .type = {to, g_.at(x).type.shape}};
    return g_.add(std::move(c));
  }

  // `view` (a node of the graph) taken of `source` instead, in `source`'s dtype.
  int view_of(const Node& view, int source) {
    Node v = view;
    v.name = name_for(view.name + "_" + to_string(g_.at(source).type.dtype));
    v.args[0] = source;
    v.type.dtype = g_.at(source).type.dtype;
    return g_.add(std::move(v));
  }

  // A 16-bit value of dtype d in memory with x's values rounded: the stored value x is a cast of, or x rounded by
  // the kernel computing it (x elementwise), or a permuted, sliced, expanded or flipped view of x copied in 16 bits
  // (the library needs it contiguous: a kernel copies it anyway). -1 for what is stored by its nature in f32 (a
  // reduction, a scan, a pool): rounding it would cost a kernel of its own. One rounding per value, however many
  // products read it.
  int stored_16_bits(int x, DType d) {
    if (const int s = half_cast_source(g_, x); s >= 0) return g_.at(s).type.dtype == d ? s : -1;
    const Node& n = g_.at(x);
    if (n.type.dtype != DType::f32 || !(round_any_ || is_elementwise_op(n.op) || (is_view_op(n.op) && n.op != "reshape")))
      return -1;
    auto [at, fresh] = rounded_.try_emplace({x, d}, -1);
    if (fresh) at->second = add_cast(x, d, name_for(n.name + "_" + to_string(d)));
    return at->second;
  }

  // The operand read as cast(s, f32) of a 16-bit value s of dtype d in memory: as stored_16_bits, and through
  // reshapes (one reshape of s: an alias of a stored value, no copy) or a transpose view (the library's flag) taken
  // of s. Else `operand` unchanged.
  int rounded_operand(int operand, bool product, DType d) {
    if (stored_operand(g_, operand, true).id >= 0) return operand;
    const Node& op = g_.at(operand);
    int source = operand;
    if (op.op == "reshape")
      while (g_.at(source).op == "reshape") source = g_.at(source).args[0];
    else if (product && is_matrix_transpose(g_, operand))
      source = op.args[0];
    const int s = stored_16_bits(source, d);
    if (s < 0) return operand;
    const int read = source != operand ? view_of(g_.at(operand), s) : s;
    return add_cast(read, DType::f32, name_for(g_.at(operand).name + "_rounded"));
  }

  int library(Node n, bool output, DType d) {
    const size_t mark = g_.nodes.size();
    const std::vector<int> original = n.args;
    const bool product = n.op == "matmul";
    for (size_t j = 0; j < 2 && j < n.args.size(); ++j) n.args[j] = rounded_operand(n.args[j], product, d);
    const std::string name = n.name;
    int id = g_.add(n);
    const auto h = half_operands(g_, id);
    if (!h || h->dtype != d) {  // the library reads f32 here: no operand rounded for it
      g_.nodes.resize(mark);
      std::erase_if(rounded_, [&](const auto& r) { return r.second >= int(mark); });  // the roundings just removed
      n.args = original;
      return g_.add(std::move(n));
    }
    Node& r = g_.nodes[size_t(id)];
    if (output) return id;
    if (product) {
      if (r.type.shape.back() % 8 != 0) return id;  // 16-byte rows: cuBLAS's tensor-core alignment
      if (r.args.size() > 2) {
        const int bias = stored_bias(g_, r.args[2], d);
        if (bias < 0) return id;
        r.args[2] = bias;
      }
    }
    r.type.dtype = d;  // keeps its name, and so its group's key: a schedule names the same group either way
    const int wide = add_cast(id, DType::f32, name_for(name + "_f32"));
    widened_[wide] = id;
    return wide;
  }

  const Graph& prim_;
  const bool round_any_;
  std::vector<std::vector<int>> readers_;  // of prim_'s nodes, made on first use
  std::vector<int> exponentiated_;         // per node: -1 not yet known, 0, 1
  Graph g_;
  std::vector<int> at_;                      // prim's node -> g's value of the same function (f32 where it was)
  std::map<int, int> widened_;               // g's cast to f32 -> the 16-bit result it reads
  std::set<int> outputs_;                    // 16-bit results that became graph outputs
  std::map<std::pair<int, DType>, int> rounded_;  // a computed f32 value -> its stored 16-bit rounding
};

}  // namespace

Graph half_results(const Graph& prim, bool round_any) { return Rewrite(prim, round_any).run(); }

}  // namespace kforge
