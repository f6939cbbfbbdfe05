#include "ir/decompose.h"

#include <functional>
#include <map>

#include "ir/builder.h"
#include "ir/error.h"
#include "ir/matmul.h"
#include "ir/ops.h"
#include "ir/shape_rules.h"

namespace kforge {

namespace {

std::vector<int64_t> range(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

int64_t count_over(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (auto d : dims) n *= s[d];
  return n;
}

struct Lowering {
  GraphBuilder& b;
  const Node& n;
  std::vector<int> args;  // already mapped into the new graph (-1 = absent)

  const Shape& shape(int id) const { return b.type(id).shape; }
  std::vector<int64_t> dims_attr(int x) const {
    auto d = n.attr_ints("dims");
    return d.empty() ? range(0, int64_t(shape(x).size())) : d;
  }
  int finish_reduce(int r, int x, const std::vector<int64_t>& dims, bool keepdim) {
    return keepdim ? r : b.reshape(r, reduced_shape(shape(x), dims, false));
  }
  int mean(int x, const std::vector<int64_t>& dims) {
    return b.scale(b.reduce("sum", x, dims), 1.0 / double(count_over(shape(x), dims)));
  }
  // Per-channel weight or bias [C] viewed so it broadcasts against [N, C, *rest].
  int channel_view(int p, size_t rank) {
    Shape s(rank - 1, 1);
    s[0] = shape(p)[0];
    return b.reshape(p, s);
  }
  // (x - mean) * rsqrt(var + eps) over dims. The variance is its own reduction (kind var), not a second
  // reduction over x - mean: the two statistics do not read each other, so a kernel computes both in one
  // walk over the rows (kernels keep double moments, see device_prelude.cpp).
  int normalize(int x, const std::vector<int64_t>& dims, double eps) {
    int xc = b.sub(x, mean(x, dims));
    int var = b.reduce("var", x, dims);
    return b.mul(xc, b.un("rsqrt", b.add(var, b.cst(eps))));
  }
  int affine(int y, int w, int bias) {
    if (w >= 0) y = b.mul(y, w);
    if (bias >= 0) y = b.add(y, bias);
    return y;
  }
  int apply_reduction(int per_element) {
    std::string r = n.attr_s("reduction");
    if (r == "none") return per_element;
    int s = b.reduce("sum", per_element, {});
    if (r == "mean") s = b.scale(s, 1.0 / double(numel(shape(per_element))));
    if (r == "batchmean") s = b.scale(s, 1.0 / double(shape(per_element).empty() ? 1 : shape(per_element)[0]));
    return b.reshape(s, {});
  }
  // A pooling whose one window is every spatial dim whole: no padding, no dilation, the kernel the input's size.
  static bool covers_spatial_dims(const Node& pool, const Shape& in) {
    if (pool.attrs.value("adaptive", false)) return false;  // the importer gives it windows of unequal widths only
    auto kernel = pool.attr_ints("kernel"), padding = pool.attr_ints("padding");
    auto dilation = pool.attrs.contains("dilation") ? pool.attr_ints("dilation") : std::vector<int64_t>{};
    if (kernel.size() + 2 != in.size()) return false;
    for (size_t d = 0; d < kernel.size(); ++d)
      if (kernel[d] != in[2 + d] || (d < padding.size() && padding[d] != 0) || (d < dilation.size() && dilation[d] != 1))
        return false;
    return true;
  }
  int norm2(int x, int64_t dim) { return b.un("sqrt", b.reduce("sum", b.mul(x, x), {dim})); }

  // torch.matmul in canonical form (ir/matmul.h). A vector operand becomes a 1-row or 1-column matrix.
  // A batch of matrices times one matrix is one taller product ([B, M, K] -> [B*M, K]), as PyTorch does:
  // one large GEMM keeps the tensor cores busier than B small ones; but a transposed view cannot be folded
  // without a copy, so it keeps its batch and the matrix serves every entry (batch stride 0). Operands are
  // brought to the same rank with leading 1s (free reshapes; a transposed view is re-made on the reshaped
  // source). An operand whose batch dims neither match the result's nor are all 1 is expanded, which the
  // partition stores (a copy), because one batch stride cannot describe it.
  int matmul(int a, int bm) {
    MatmulDims d = matmul_dims(shape(a), shape(bm), "node '" + n.name + "': ");
    // (A matmul given an activation epilogue in JSON keeps the library path, which applies it.)
    const std::string epilogue = n.attrs.value("epilogue", "none");
    if (d.n == 1 && !is_matrix_transpose(b.graph(), a) && (epilogue == "none" || epilogue == "bias"))
      return matrix_vector(a, bm);
    if (d.a_vector) a = b.reshape(a, {1, d.k});
    if (d.b_vector) bm = b.reshape(bm, {d.k, 1});
    if (shape(bm).size() == 2 && shape(a).size() > 2 && !is_matrix_transpose(b.graph(), a))
      a = b.reshape(a, {numel(d.batch) * d.m, d.k});
    size_t rank = std::max(shape(a).size(), shape(bm).size());
    Shape out_batch = shape(a).size() == 2 && shape(bm).size() == 2 ? Shape{} : d.batch;
    auto align = [&](int x) {
      x = with_rank(x, rank);
      Shape s = shape(x), batch(s.begin(), s.end() - 2);
      if (batch != out_batch && numel(batch) != 1) {
        Shape full = out_batch;
        full.insert(full.end(), s.end() - 2, s.end());
        x = b.op("expand", {x}, {{"shape", full}});
      }
      return x;
    };
    a = align(a);
    bm = align(bm);
    std::vector<int> margs = {a, bm};
    if (args.size() > 2 && args[2] >= 0) margs.push_back(args[2]);
    // The node keeps its name (the schedule's group key) when no reshape follows it.
    bool last = matmul_dims(shape(a), shape(bm), "").result == n.type.shape;
    int r = b.op("matmul", margs, n.attrs, last ? n.name : "");
    return b.reshape(r, n.type.shape);
  }
  // A product with one output column (a matrix times a vector, a Linear layer with one output) as what it is: a
  // reduction over K of a times b's column, broadcast along a's rows. Its arithmetic intensity is half a FLOP per byte
  // of a, so it is bound by reading a; a row kernel walks a at the copy bandwidth (18_mean_last_dim at 100% of it)
  // where cuBLAS's GEMV reached 92% (04_matrix_vector), and the epilogue ops after it fuse into the row kernel. Plain
  // fp32 products and sums: both tiers'. b's column becomes a row [..., 1, K] (a vector as it is; [..., K, 1] reshaped,
  // the same memory; a transposed [..., 1, K] its source). a read transposed keeps the library product (the walk along
  // K would be strided).
  int matrix_vector(int a, int bm) {
    int row = bm;
    if (is_matrix_transpose(b.graph(), bm)) {
      row = b.graph().at(bm).args[0];
    } else if (shape(bm).size() >= 2) {
      Shape s = shape(bm);
      std::swap(s[s.size() - 2], s[s.size() - 1]);
      row = b.reshape(bm, s);
    }
    int r = b.reduce("sum", b.mul(a, row), {int64_t(std::max(shape(a).size(), shape(row).size())) - 1});
    if (args.size() > 2 && args[2] >= 0) r = b.add(r, args[2]);
    return b.reshape(r, n.type.shape);
  }
  // x with leading 1s up to `rank` dims.
  int with_rank(int x, size_t rank) {
    auto padded = [&](Shape s) {
      s.insert(s.begin(), rank - s.size(), 1);
      return s;
    };
    if (shape(x).size() == rank) return x;
    if (!is_matrix_transpose(b.graph(), x)) return b.reshape(x, padded(shape(x)));
    std::vector<int64_t> dims = range(0, int64_t(rank));
    std::swap(dims[rank - 2], dims[rank - 1]);
    return b.op("permute", {b.reshape(b.graph().at(x).args[0], padded(shape(b.graph().at(x).args[0])))}, {{"dims", dims}});
  }

  int lower() {
    const std::string& op = n.op;
    int x = args.empty() ? -1 : args[0];
    auto arg = [&](size_t i) { return i < args.size() ? args[i] : -1; };
    if (op == "contiguous") return x;
    if (op == "matmul") return matmul(x, arg(1));
    // The primitive conv is the library's (no bias): a bias becomes an add of its [O, 1, ..] view, which the
    // pointwise generator runs on the stored result (or, where nothing reads the sum, codegen/conv_epilogue.h
    // folds back into the step that writes it).
    if ((op == "conv" || op == "conv_transpose") && arg(2) >= 0)
      return b.add(b.op(op, {x, arg(1)}, n.attrs), channel_view(arg(2), shape(x).size()));
    if (op == "sum" || op == "amax" || op == "amin" || op == "prod") {
      static const std::map<std::string, std::string> kind = {
          {"sum", "sum"}, {"amax", "max"}, {"amin", "min"}, {"prod", "prod"}};
      auto dims = dims_attr(x);
      return finish_reduce(b.reduce(kind.at(op), x, dims), x, dims, n.attr_b("keepdim"));
    }
    if (op == "mean") {
      auto dims = dims_attr(x);
      return finish_reduce(mean(x, dims), x, dims, n.attr_b("keepdim"));
    }
    if (op == "argmax" || op == "argmin") {
      std::vector<int64_t> dims = {n.attr_i("dim")};
      return finish_reduce(b.reduce(op, x, dims), x, dims, n.attr_b("keepdim"));
    }
    if (op == "var") {
      auto dims = dims_attr(x);
      double count = double(count_over(shape(x), dims));
      int v = b.scale(b.reduce("var", x, dims), count / (count - n.attr_f("correction")));
      return finish_reduce(v, x, dims, n.attr_b("keepdim"));
    }
    if (op == "vector_norm") {
      auto dims = dims_attr(x);
      double ord = n.attr_f("ord");
      int r;
      if (ord == 1) r = b.reduce("sum", b.un("abs", x), dims);
      else if (ord == 2) r = b.un("sqrt", b.reduce("sum", b.mul(x, x), dims));
      else throw UserError("node '" + n.name + "': vector_norm supports ord 1 and 2, got " + std::to_string(ord));
      return finish_reduce(r, x, dims, n.attr_b("keepdim"));
    }
    if (op == "softmax" || op == "log_softmax") {
      int64_t d = n.attr_i("dim");
      int shifted = b.sub(x, b.reduce("max", x, {d}));
      int e = b.un("exp", shifted);
      int s = b.reduce("sum", e, {d});
      return op == "softmax" ? b.div(e, s) : b.sub(shifted, b.un("log", s));
    }
    if (op == "layer_norm") {
      int64_t k = n.attr_i("normalized_ndim"), r = int64_t(shape(x).size());
      return affine(normalize(x, range(r - k, r), n.attr_f("eps")), arg(1), arg(2));
    }
    if (op == "rms_norm") {
      int64_t k = n.attr_i("normalized_ndim"), r = int64_t(shape(x).size());
      int ms = mean(b.mul(x, x), range(r - k, r));
      return affine(b.mul(x, b.un("rsqrt", b.add(ms, b.cst(n.attr_f("eps"))))), arg(1), -1);
    }
    if (op == "batch_norm" || op == "instance_norm") {
      size_t rank = shape(x).size();
      std::vector<int64_t> dims = op == "batch_norm" ? range(2, int64_t(rank)) : range(2, int64_t(rank));
      if (op == "batch_norm") dims.insert(dims.begin(), 0);
      int y = normalize(x, dims, n.attr_f("eps"));
      int w = arg(1) >= 0 ? channel_view(arg(1), rank) : -1;
      int bias = arg(2) >= 0 ? channel_view(arg(2), rank) : -1;
      return affine(y, w, bias);
    }
    if (op == "group_norm") {
      // View x [N, C, *sp] as [N, G, C/G, *sp] (free: x is contiguous) and normalise over dims 2..;
      // the affine runs in that view too, so only the final output is reshaped back.
      Shape s = shape(x);
      int64_t G = n.attr_i("groups");
      Shape s5 = {s[0], G, s[1] / G};
      s5.insert(s5.end(), s.begin() + 2, s.end());
      int x5 = b.reshape(x, s5);
      int y = normalize(x5, range(2, int64_t(s5.size())), n.attr_f("eps"));
      Shape ws(s5.size() - 1, 1);
      ws[0] = G;
      ws[1] = s[1] / G;
      int w = arg(1) >= 0 ? b.reshape(arg(1), ws) : -1;
      int bias = arg(2) >= 0 ? b.reshape(arg(2), ws) : -1;
      return b.reshape(affine(y, w, bias), s);
    }
    if (is_scan_op(op))
      return b.op("scan", {x}, {{"kind", scan_kind(op)}, {"dim", n.attr_i("dim")},
                               {"reverse", n.attrs.value("reverse", false)}});
    if (op == "max_pool" || op == "avg_pool") {
      // A window over the whole of every spatial dim (global pooling: adaptive pooling to 1, a squeeze-and-
      // excitation block's or a classifier head's) is a reduction over those dims: the pooling kernel walks each
      // window in one thread, tens of thousands of elements each on a few thousand threads, where the row kernels
      // split a row across a block.
      if (covers_spatial_dims(n, shape(x))) {
        std::vector<int64_t> dims = range(2, int64_t(shape(x).size()));
        return op == "max_pool" ? b.reduce("max", x, dims) : mean(x, dims);
      }
      json a = n.attrs;
      a["kind"] = op == "max_pool" ? "max" : "avg";
      return b.op("pool", {x}, a);
    }
    if (op == "mse_loss") {
      int d = b.sub(x, arg(1));
      return apply_reduction(b.mul(d, d));
    }
    if (op == "huber_loss" || op == "smooth_l1_loss") {
      int d = b.sub(x, arg(1)), ad = b.un("abs", d);
      double t = op == "huber_loss" ? n.attr_f("delta") : n.attr_f("beta");
      if (t == 0) return apply_reduction(ad);
      int quad = b.scale(b.mul(d, d), op == "huber_loss" ? 0.5 : 0.5 / t);
      int lin = op == "huber_loss" ? b.scale(b.sub(ad, b.cst(0.5 * t)), t) : b.sub(ad, b.cst(0.5 * t));
      return apply_reduction(b.op("where", {b.bin("lt", ad, b.cst(t)), quad, lin}));
    }
    if (op == "kl_div") {
      int input = x, target = arg(1), e;
      if (n.attrs.value("log_target", false)) {
        e = b.mul(b.un("exp", target), b.sub(target, input));
      } else {  // xlogy: a zero target contributes 0, not NaN
        int pos = b.bin("gt", target, b.cst(0));
        int safe = b.op("where", {pos, target, b.cst(1)});
        e = b.op("where", {pos, b.mul(target, b.sub(b.un("log", safe), input)), b.cst(0)});
      }
      return apply_reduction(e);
    }
    if (op == "cross_entropy") {
      // loss_n = logsumexp(x_n) - x[n, t_n]: no [N, C] log-softmax is materialised.
      int64_t N = shape(x)[0];
      int m = b.reduce("max", x, {1});
      int lse = b.add(m, b.un("log", b.reduce("sum", b.un("exp", b.sub(x, m)), {1})));
      int picked = b.op("gather", {x, b.reshape(arg(1), {N, 1})}, {{"dim", 1}});
      int l = b.sub(lse, picked);
      return apply_reduction(b.reshape(l, {N}));
    }
    if (op == "triplet_margin_loss") {
      double p = n.attr_opt_f("p").value_or(2.0);
      if (p != 1.0 && p != 2.0) throw UserError("node '" + n.name + "': triplet_margin_loss supports p=1 and p=2");
      int64_t N = shape(x)[0];
      double eps = n.attr_opt_f("eps").value_or(1e-6);
      // pairwise_distance(a, b) = ||a - b + eps||_p over the feature dim
      auto dist = [&](int other) {
        int d = b.add(b.sub(x, other), b.cst(eps));
        return p == 2.0 ? norm2(d, 1) : b.reduce("sum", b.un("abs", d), {1});
      };
      int dp = dist(arg(1)), dn = dist(arg(2));
      int l = b.un("clamp", b.add(b.sub(dp, dn), b.cst(n.attr_f("margin"))), {{"min", 0.0}, {"max", nullptr}});
      return apply_reduction(b.reshape(l, {N}));
    }
    if (op == "cosine_similarity") {
      int64_t d = n.attr_i("dim");
      double eps = n.attr_f("eps");
      json clampmin = {{"min", eps}, {"max", nullptr}};
      int na = b.un("clamp", norm2(x, d), clampmin), nb = b.un("clamp", norm2(arg(1), d), clampmin);
      int dot = b.reduce("sum", b.mul(x, arg(1)), {d});
      int c = b.div(dot, b.mul(na, nb));
      return b.reshape(c, n.type.shape);
    }
    // Primitives pass through unchanged.
    if (is_primitive_op(op)) return b.op(op, args, n.attrs, n.name);
    throw UserError("node '" + n.name + "': op '" + op + "' has no decomposition");
  }
};

// flip(scan(flip(x, d), d, rev), d) == scan(x, d, !rev): a reverse scan needs no copies.
int fold_flipped_scan(Graph& g, int id) {
  const Node& outer = g.at(id);
  if (outer.op != "flip" || outer.attr_ints("dims").size() != 1) return id;
  const Node& scan = g.at(outer.args[0]);
  if (scan.op != "scan") return id;
  const Node& inner = g.at(scan.args[0]);
  int64_t d = outer.attr_ints("dims")[0];
  if (inner.op != "flip" || inner.attr_ints("dims") != std::vector<int64_t>{d} || scan.attr_i("dim") != d) return id;
  Node n = scan;
  n.name = outer.name;
  n.args = {inner.args[0]};
  n.attrs["reverse"] = !scan.attr_b("reverse");
  n.type = infer_type(g, n);
  return g.add(std::move(n));
}

}  // namespace

Graph decompose(const Graph& hl) {
  Graph g;
  GraphBuilder b(g);
  std::vector<int> map(hl.nodes.size(), -1);
  for (size_t i = 0; i < hl.nodes.size(); ++i) {
    const Node& n = hl.nodes[i];
    if (n.op == "input" || n.op == "param") {
      map[i] = g.add(n);
      (n.op == "input" ? g.inputs : g.params).push_back(map[i]);
      continue;
    }
    std::vector<int> args;
    for (int a : n.args) args.push_back(a < 0 ? -1 : map[a]);
    b.set_prefix(n.name);
    Lowering l{b, n, args};
    int id = l.lower();
    if (g.at(id).type != n.type)
      throw InternalError("decomposition of '" + n.name + "' (" + n.op + ") produced type " +
                          to_string(g.at(id).type.shape) + " instead of " + to_string(n.type.shape));
    map[i] = fold_flipped_scan(g, id);
  }
  for (int o : hl.outputs) g.outputs.push_back(map[o]);
  return g;
}

}  // namespace kforge
