#include "ir/shape_rules.h"

#include <algorithm>
#include <set>

#include "ir/attention.h"
#include "ir/error.h"
#include "ir/conv.h"
#include "ir/matmul.h"
#include "ir/ops.h"
#include "ir/pad.h"
#include "ir/pool.h"
#include "ir/recurrence.h"

namespace kforge {

namespace {

[[noreturn]] void fail(const Node& n, const std::string& why) {
  throw UserError("node '" + n.name + "' (op " + n.op + "): " + why);
}

const TensorType& arg(const Graph& g, const Node& n, size_t i) {
  if (i >= n.args.size() || n.args[i] < 0) fail(n, "argument " + std::to_string(i) + " is missing");
  return g.at(n.args[i]).type;
}

// An optional argument (weight, bias): nullptr when absent.
const TensorType* opt_arg(const Graph& g, const Node& n, size_t i) {
  if (i >= n.args.size() || n.args[i] < 0) return nullptr;
  return &g.at(n.args[i]).type;
}

void need_args(const Node& n, size_t lo, size_t hi) {
  if (n.args.size() < lo || n.args.size() > hi)
    fail(n, "takes " + std::to_string(lo) + (lo == hi ? "" : "-" + std::to_string(hi)) +
                " arguments, got " + std::to_string(n.args.size()));
}

void need_float(const Node& n, const TensorType& t, const std::string& what) {
  if (t.dtype != DType::f32) fail(n, what + " must be f32, got " + to_string(t.dtype));
}

int64_t check_dim(const Node& n, int64_t d, size_t rank) {
  if (d < 0 || d >= int64_t(rank))
    fail(n, "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(rank));
  return d;
}

std::vector<int64_t> check_dims(const Node& n, std::vector<int64_t> dims, size_t rank) {
  if (dims.empty())
    for (size_t i = 0; i < rank; ++i) dims.push_back(int64_t(i));
  for (auto d : dims) check_dim(n, d, rank);
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) fail(n, "dims repeat");
  return dims;
}

TensorType reduction(const Graph& g, const Node& n, DType out) {
  need_args(n, 1, 1);
  const auto& x = arg(g, n, 0);
  auto dims = check_dims(n, n.attr_ints("dims"), x.shape.size());
  return {out, reduced_shape(x.shape, dims, n.attr_b("keepdim"))};
}

TensorType arg_reduction(const Graph& g, const Node& n) {
  need_args(n, 1, 1);
  const auto& x = arg(g, n, 0);
  need_float(n, x, "input");
  auto d = check_dim(n, n.attr_i("dim"), x.shape.size());
  return {DType::i64, reduced_shape(x.shape, {d}, n.attr_b("keepdim"))};
}

void check_affine(const Graph& g, const Node& n, size_t first, const Shape& want) {
  for (size_t i = first; i < n.args.size(); ++i)
    if (auto* t = opt_arg(g, n, i); t && t->shape != want)
      fail(n, "weight/bias shape " + to_string(t->shape) + " should be " + to_string(want));
}

TensorType loss(const Graph& g, const Node& n, const Shape& per_element) {
  std::string r = n.attr_s("reduction");
  if (r == "none") return {DType::f32, per_element};
  if (r == "mean" || r == "sum" || r == "batchmean") return {DType::f32, {}};
  fail(n, "reduction must be none, mean, sum or batchmean, got '" + r + "'");
}

// torch.matmul, f32 only; a fused epilogue's bias (third argument) broadcasts along the result's last dim.
TensorType matmul(const Graph& g, const Node& n) {
  need_args(n, 2, 3);
  const auto &a = arg(g, n, 0), &b = arg(g, n, 1);
  need_float(n, a, "operand a");
  need_float(n, b, "operand b");
  MatmulDims d = matmul_dims(a.shape, b.shape, "node '" + n.name + "': ");
  Epilogue e = epilogue_from_string(n.attrs.value("epilogue", "none"));
  if (has_bias(e) != (n.args.size() == 3)) fail(n, "epilogue " + to_string(e) + " and the argument count disagree");
  if (has_bias(e)) {
    const auto& bias = arg(g, n, 2);
    need_float(n, bias, "bias");
    if (d.b_vector || bias.shape.empty() || bias.shape.back() != d.n || numel(bias.shape) != d.n ||
        bias.shape.size() > d.result.size())
      fail(n, "bias " + to_string(bias.shape) + " must hold one value per result column (" + std::to_string(d.n) + ")");
  }
  return {DType::f32, d.result};
}

// PyTorch's convolution (ir/conv.h), f32 only; the optional bias holds one value per output channel.
// conv and conv_transpose: the rules of ir/conv.h, and a bias of one value per output channel.
TensorType conv(const Graph& g, const Node& n) {
  need_args(n, 2, 3);
  const auto &x = arg(g, n, 0), &w = arg(g, n, 1);
  need_float(n, x, "input");
  need_float(n, w, "weight");
  const std::string where = "node '" + n.name + "': ";
  Shape result = n.op == "conv" ? conv_dims(x.shape, w.shape, n.attrs, where).result
                                : conv_transpose_dims(x.shape, w.shape, n.attrs, where).result;
  if (n.args.size() == 3) {
    const auto& bias = arg(g, n, 2);
    need_float(n, bias, "bias");
    const int64_t channels = is_channels_last(n.attrs) ? result.back() : result[1];
    if (bias.shape != Shape{channels})
      fail(n, n.op + " bias " + to_string(bias.shape) + " must be [" + std::to_string(channels) + "] (one per output channel)");
  }
  return {DType::f32, result};
}

TensorType pooling(const Graph& g, const Node& n) {
  need_args(n, 1, 1);
  const auto& x = arg(g, n, 0);
  need_float(n, x, "input");
  const bool last = is_channels_last(n.attrs);
  Shape out = {x.shape.size() > 0 ? x.shape[0] : 0};
  for (const PoolDim& d : pool_dims(n.attrs, x.shape, "node '" + n.name + "' (op " + n.op + ")")) out.push_back(d.out);
  out.insert(last ? out.end() : out.begin() + 1, x.shape.size() > 1 ? x.shape[last ? x.shape.size() - 1 : 1] : 0);
  return {DType::f32, out};
}

}  // namespace

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims, bool keepdim) {
  std::set<int64_t> red(dims.begin(), dims.end());
  if (dims.empty())
    for (size_t i = 0; i < in.size(); ++i) red.insert(int64_t(i));
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!red.count(int64_t(i))) out.push_back(in[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

TensorType infer_type(const Graph& g, const Node& n) {
  const std::string& op = n.op;
  if (op == "opaque") {  // one output of a model kept whole (python/kforge/opaque.py): its type is stated
    if (!n.attrs.contains("shape") || !n.attrs["shape"].is_array()) fail(n, "an opaque output states its shape");
    return type_from_json(n.attrs, "opaque output '" + n.name + "'");
  }
  if (op == "cast") {
    need_args(n, 1, 1);
    return {dtype_from_string(n.attr_s("dtype")), arg(g, n, 0).shape};
  }
  // Half-precision values are storage (ir/types.h): only a cast reads them, and views of them (codegen/half_views.h).
  for (size_t i = 0; i < n.args.size() && !is_view_op(op); ++i)
    if (n.args[i] >= 0 && is_half(g.at(n.args[i]).type.dtype))
      fail(n, "argument " + std::to_string(i) + " is " + to_string(g.at(n.args[i]).type.dtype) +
                  ": half-precision values are read through a cast to f32");
  if (op == "const") {
    need_args(n, 0, 0);
    n.attr_f("value");
    DType d = dtype_from_string(n.attrs.value("dtype", "f32"));
    if (is_half(d)) fail(n, "a constant is f32, i64 or bool (half precision is storage only)");
    return {d, {}};
  }
  if (is_unary_op(op)) {
    need_args(n, 1, 1);
    const auto& x = arg(g, n, 0);
    if (op != "abs" && op != "neg" && op != "sign") need_float(n, x, "input");
    if (op == "clamp" && !n.has_attr("min") && !n.has_attr("max")) fail(n, "clamp needs min or max");
    return x;
  }
  if (is_binary_op(op)) {
    need_args(n, 2, 2);
    const auto &a = arg(g, n, 0), &b = arg(g, n, 1);
    Shape s;
    try {
      s = broadcast_shapes(a.shape, b.shape);
    } catch (const UserError& e) {
      fail(n, e.what());
    }
    if (is_comparison_op(op)) return {DType::boolean, s};
    if (a.dtype != b.dtype) fail(n, "mixes " + to_string(a.dtype) + " and " + to_string(b.dtype) + "; cast first");
    return {a.dtype, s};
  }
  if (op == "where") {
    need_args(n, 3, 3);
    const auto &c = arg(g, n, 0), &a = arg(g, n, 1), &b = arg(g, n, 2);
    if (c.dtype != DType::boolean) fail(n, "condition must be bool");
    if (a.dtype != b.dtype) fail(n, "branches have different dtypes");
    return {a.dtype, broadcast_shapes(c.shape, broadcast_shapes(a.shape, b.shape))};
  }
  if (op == "reshape") {
    need_args(n, 1, 1);
    const auto& x = arg(g, n, 0);
    Shape s = n.attr_ints("shape");
    if (numel(s) != numel(x.shape)) fail(n, "cannot reshape " + to_string(x.shape) + " to " + to_string(s));
    return {x.dtype, s};
  }
  if (op == "contiguous") {
    need_args(n, 1, 1);
    return arg(g, n, 0);
  }
  if (op == "permute") {
    need_args(n, 1, 1);
    const auto& x = arg(g, n, 0);
    auto p = n.attr_ints("dims");
    auto sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != int64_t(i) || p.size() != x.shape.size()) fail(n, "dims is not a permutation of the input's dims");
    Shape s;
    for (auto d : p) s.push_back(x.shape[d]);
    return {x.dtype, s};
  }
  if (op == "expand") {
    need_args(n, 1, 1);
    const auto& x = arg(g, n, 0);
    Shape s = n.attr_ints("shape");
    if (broadcast_shapes(x.shape, s) != s) fail(n, "cannot expand " + to_string(x.shape) + " to " + to_string(s));
    return {x.dtype, s};
  }
  if (op == "slice") {  // x[.., start:end:step, ..] along dim: a strided view
    need_args(n, 1, 1);
    TensorType out = arg(g, n, 0);
    const int64_t d = n.attr_i("dim"), start = n.attr_i("start"), end = n.attr_i("end"), step = n.attr_i("step");
    check_dim(n, d, out.shape.size());
    if (step < 1) fail(n, "step must be positive, got " + std::to_string(step));
    if (start < 0 || end > out.shape[size_t(d)] || start >= end)
      fail(n, "takes [" + std::to_string(start) + ", " + std::to_string(end) + ") of a dim of " + std::to_string(out.shape[size_t(d)]) +
                  ": a non-empty range inside it");
    out.shape[size_t(d)] = (end - start + step - 1) / step;
    return out;
  }
  if (op == "flip") {
    need_args(n, 1, 1);
    check_dims(n, n.attr_ints("dims"), arg(g, n, 0).shape.size());
    return arg(g, n, 0);
  }
  if (op == "triangle") {  // torch.triu / tril: x where the last two dims' (row, col) lie in the triangle, else 0
    need_args(n, 1, 1);
    if (arg(g, n, 0).shape.size() < 2) fail(n, "needs at least 2 dims (rows and columns are the last two)");
    n.attr_b("upper");
    n.attr_i("diagonal");
    return arg(g, n, 0);
  }
  if (op == "pad") {  // F.pad in every mode, every dim at once (ir/pad.h)
    need_args(n, 1, 1);
    TensorType out = arg(g, n, 0);
    const PadSpec spec = pad_spec(n, out.shape, "node '" + n.name + "': ");
    for (size_t d = 0; d < out.shape.size(); ++d) out.shape[d] += spec.dims[d].left + spec.dims[d].right;
    return out;
  }
  if (op == "cat") {  // torch.cat: the args one after another along dim, every other dim equal
    need_args(n, 2, 1 << 16);
    TensorType out = arg(g, n, 0);
    int64_t d = n.attr_i("dim");
    check_dim(n, d, out.shape.size());
    for (size_t k = 1; k < n.args.size(); ++k) {
      const TensorType& t = arg(g, n, k);
      Shape rest = t.shape, first = out.shape;
      if (t.dtype != out.dtype) fail(n, "argument " + std::to_string(k) + " is " + to_string(t.dtype) + ", the first " + to_string(out.dtype));
      if (rest.size() != first.size()) fail(n, "argument " + std::to_string(k) + " has another rank");
      rest[size_t(d)] = first[size_t(d)] = 0;
      if (rest != first) fail(n, "argument " + std::to_string(k) + "'s shape differs from the first's outside dim " + std::to_string(d));
      out.shape[size_t(d)] += t.shape[size_t(d)];
    }
    return out;
  }
  if (op == "gather") {  // out[.., i, ..] = x[.., index[.., i, ..], ..] along dim
    need_args(n, 2, 2);
    const auto &x = arg(g, n, 0), &idx = arg(g, n, 1);
    if (idx.dtype != DType::i64) fail(n, "index must be i64");
    if (idx.shape.size() != x.shape.size()) fail(n, "index rank must equal input rank");
    check_dim(n, n.attr_i("dim"), x.shape.size());
    return {x.dtype, idx.shape};
  }
  if (op == "reduce") {
    std::string k = n.attr_s("kind");
    if (k == "argmax" || k == "argmin") {
      auto dims = n.attr_ints("dims");
      if (dims.size() != 1) fail(n, k + " reduces exactly one dim");
      return {DType::i64, reduced_shape(arg(g, n, 0).shape, dims, n.attr_b("keepdim"))};
    }
    if (k != "sum" && k != "prod" && k != "max" && k != "min" && k != "var") fail(n, "unknown reduce kind '" + k + "'");
    if (k == "var" && arg(g, n, 0).dtype != DType::f32) fail(n, "var reduces f32 values only");
    return reduction(g, n, arg(g, n, 0).dtype);
  }
  if (op == "sum" || op == "amax" || op == "amin" || op == "prod") {  // integers reduce exactly, as in torch
    DType in = arg(g, n, 0).dtype;
    return reduction(g, n, in == DType::f32 ? DType::f32 : (op == "sum" || op == "prod") ? DType::i64 : in);
  }
  if (op == "mean" || op == "var" || op == "vector_norm") {
    need_float(n, arg(g, n, 0), "input");
    return reduction(g, n, DType::f32);
  }
  if (op == "argmax" || op == "argmin") return arg_reduction(g, n);
  if (op == "softmax" || op == "log_softmax" || is_scan_op(op) || op == "scan") {
    need_args(n, 1, 1);
    const auto& x = arg(g, n, 0);
    need_float(n, x, "input");
    check_dim(n, n.attr_i("dim"), x.shape.size());
    if (op == "scan" && !is_scan_kind(n.attr_s("kind")))
      fail(n, "scan kind '" + n.attr_s("kind") + "' is not one of sum, prod, max, min, logsumexp");
    return x;
  }
  if (op == "layer_norm" || op == "rms_norm") {
    need_args(n, 1, 3);
    const auto& x = arg(g, n, 0);
    need_float(n, x, "input");
    int64_t k = n.attr_i("normalized_ndim");
    if (k < 1 || k > int64_t(x.shape.size())) fail(n, "normalized_ndim out of range");
    check_affine(g, n, 1, Shape(x.shape.end() - k, x.shape.end()));
    return x;
  }
  if (op == "batch_norm" || op == "group_norm" || op == "instance_norm") {
    need_args(n, 1, 3);
    const auto& x = arg(g, n, 0);
    need_float(n, x, "input");
    if (x.shape.size() < 2) fail(n, "expects [N, C, ...]");
    if (op == "group_norm" && x.shape[1] % n.attr_i("groups") != 0) fail(n, "channels not divisible by groups");
    check_affine(g, n, 1, {x.shape[1]});
    return x;
  }
  if (op == "max_pool" || op == "avg_pool" || op == "pool") return pooling(g, n);
  if (op == "matmul") return matmul(g, n);
  if (is_attention_op(op)) return {DType::f32, attention_dims(g, n).result};
  if (is_conv_op(op)) return conv(g, n);
  if (op == "recurrence") {
    const RecurrenceDims d = recurrence_dims(g, n);
    return {DType::f32, {d.steps, d.batch, d.width()}};
  }
  if (op == "mse_loss" || op == "huber_loss" || op == "smooth_l1_loss" || op == "kl_div") {
    need_args(n, 2, 2);
    const auto &a = arg(g, n, 0), &b = arg(g, n, 1);
    if (a.shape != b.shape) fail(n, "input " + to_string(a.shape) + " and target " + to_string(b.shape) + " differ in shape");
    return loss(g, n, a.shape);
  }
  if (op == "cross_entropy") {
    need_args(n, 2, 2);
    const auto &x = arg(g, n, 0), &t = arg(g, n, 1);
    if (x.shape.size() != 2 || t.shape.size() != 1 || t.shape[0] != x.shape[0] || t.dtype != DType::i64)
      fail(n, "expects logits [N, C] and i64 targets [N]");
    return loss(g, n, {x.shape[0]});
  }
  if (op == "triplet_margin_loss") {
    need_args(n, 3, 3);
    const auto& a = arg(g, n, 0);
    if (a.shape.size() != 2 || arg(g, n, 1).shape != a.shape || arg(g, n, 2).shape != a.shape)
      fail(n, "expects three [N, D] tensors");
    return loss(g, n, {a.shape[0]});
  }
  if (op == "cosine_similarity") {
    need_args(n, 2, 2);
    const auto &a = arg(g, n, 0), &b = arg(g, n, 1);
    Shape s = broadcast_shapes(a.shape, b.shape);
    return {DType::f32, reduced_shape(s, {check_dim(n, n.attr_i("dim"), s.size())}, false)};
  }
  fail(n, "unknown op (see docs/interfaces.md for the ops kforge supports)");
}

}  // namespace kforge
