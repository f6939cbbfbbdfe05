#include "ir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/attention.h"
#include "ir/conv.h"
#include "ir/error.h"
#include "ir/matmul.h"
#include "ir/pad.h"
#include "ir/pool.h"
#include "ir/ops.h"
#include "ir/recurrence.h"
#include "ir/scalar_math.h"

namespace kforge {

namespace {

// Iterates the coordinates of a shape in row-major order.
struct CoordIter {
  Shape shape;
  std::vector<int64_t> c;
  explicit CoordIter(const Shape& s) : shape(s), c(s.size(), 0) {}
  void next() {
    for (int i = int(c.size()) - 1; i >= 0; --i) {
      if (++c[i] < shape[i]) return;
      c[i] = 0;
    }
  }
};

// Strides of `in` read at the coordinates of `out` under numpy broadcasting (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  auto cs = contiguous_strides(in);
  std::vector<int64_t> s(out.size(), 0);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : cs[i];
  return s;
}

int64_t dot(const std::vector<int64_t>& c, const std::vector<int64_t>& s) {
  int64_t o = 0;
  for (size_t i = 0; i < c.size(); ++i) o += c[i] * s[i];
  return o;
}

// Whether element c of a `triangle` node's result keeps its value: column - row >= diagonal (upper, torch.triu) or
// <= diagonal (lower, torch.tril), over the last two dims.
bool in_triangle(const Node& n, const std::vector<int64_t>& c) {
  const int64_t offset = c[c.size() - 1] - c[c.size() - 2], diagonal = n.attr_i("diagonal");
  return n.attr_b("upper") ? offset >= diagonal : offset <= diagonal;
}

HostTensor elementwise(const Node& n, const std::vector<const HostTensor*>& a) {
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape))};
  std::vector<std::vector<int64_t>> strides;
  for (auto* t : a) strides.push_back(broadcast_strides(t->type.shape, n.type.shape));
  CoordIter it(n.type.shape);
  for (size_t i = 0; i < out.data.size(); ++i, it.next()) {
    auto v = [&](size_t k) { return a[k]->data[dot(it.c, strides[k])]; };
    double r;
    if (n.op == "where") r = v(0) != 0 ? v(1) : v(2);
    else if (n.op == "triangle") r = in_triangle(n, it.c) ? v(0) : 0.0;
    else if (a.size() == 2) r = eval_binary(n.op, v(0), v(1));
    else r = eval_unary(n, v(0));
    if (n.type.dtype != DType::f32) r = round_to(n.type.dtype, r);  // f32 stays exact: the reference's double
    out.data[i] = r;
  }
  return out;
}

HostTensor reduce(const Node& n, const HostTensor& x);

// Population variance over `dims`, two-pass in double: the reference the kernels' one-pass moments meet.
HostTensor reduce_var(const Node& n, const HostTensor& x) {
  Node sum = n;
  sum.attrs["kind"] = "sum";
  HostTensor mean = reduce(sum, x), out = mean;
  double count = double(x.data.size()) / double(std::max<size_t>(mean.data.size(), 1));
  for (auto& m : mean.data) m /= count;
  std::fill(out.data.begin(), out.data.end(), 0.0);
  Shape kept = x.type.shape;
  for (auto d : n.attr_ints("dims")) kept[d] = 1;
  auto ostrides = broadcast_strides(kept, x.type.shape);
  CoordIter it(x.type.shape);
  for (size_t i = 0; i < x.data.size(); ++i, it.next()) {
    int64_t o = dot(it.c, ostrides);
    out.data[o] += (x.data[i] - mean.data[o]) * (x.data[i] - mean.data[o]);
  }
  for (auto& v : out.data) v /= count;
  return out;
}

HostTensor reduce(const Node& n, const HostTensor& x) {
  std::string kind = n.attr_s("kind");
  if (kind == "var") return reduce_var(n, x);
  auto dims = n.attr_ints("dims");
  Shape kept = x.type.shape;
  for (auto d : dims) kept[d] = 1;
  HostTensor out{{n.type.dtype, kept}, {}};
  double init = kind == "sum" ? 0 : kind == "prod" ? 1
                : (kind == "max" || kind == "argmax") ? -std::numeric_limits<double>::infinity()
                                                      : std::numeric_limits<double>::infinity();
  out.data.assign(numel(kept), init);
  std::vector<double> best(numel(kept), init);
  auto ostrides = broadcast_strides(kept, x.type.shape);
  bool is_arg = kind == "argmax" || kind == "argmin";
  if (is_arg) std::fill(out.data.begin(), out.data.end(), 0.0);
  std::vector<bool> seen(numel(kept), false);
  CoordIter it(x.type.shape);
  for (size_t i = 0; i < x.data.size(); ++i, it.next()) {
    int64_t o = dot(it.c, ostrides);
    double v = x.data[i];
    if (kind == "sum") out.data[o] += v;
    else if (kind == "prod") out.data[o] *= v;
    else if (kind == "max") out.data[o] = std::isnan(v) || v > out.data[o] ? v : out.data[o];
    else if (kind == "min") out.data[o] = std::isnan(v) || v < out.data[o] ? v : out.data[o];
    else {  // first index of the extreme value, as PyTorch returns
      bool better = !std::isnan(best[o]) && (std::isnan(v) || (kind == "argmax" ? v > best[o] : v < best[o]));
      if (!seen[o] || better) {
        best[o] = v;
        out.data[o] = double(it.c[dims[0]]);
        seen[o] = true;
      }
    }
  }
  out.type = n.type;  // keepdim=false shapes have the same row-major data
  return out;
}

// One step of a scan of `kind`: PyTorch's cummax / cummin keep a NaN once met (their `x >= best || isnan(x)`),
// logcumsumexp adds in log space (its running value starts at -inf).
double scan_step(const std::string& kind, double acc, double x) {
  if (kind == "sum") return acc + x;
  if (kind == "prod") return acc * x;
  if (kind == "max") return std::isnan(acc) || (!std::isnan(x) && acc > x) ? acc : x;
  if (kind == "min") return std::isnan(acc) || (!std::isnan(x) && acc < x) ? acc : x;
  const double m = std::max(acc, x);
  return std::isinf(m) && m < 0 ? m : m + std::log1p(std::exp(-std::abs(acc - x)));
}

HostTensor scan(const Node& n, const HostTensor& x) {
  int64_t d = n.attr_i("dim");
  const std::string kind = n.attr_s("kind");
  const bool rev = n.attr_b("reverse");
  const double first = kind == "sum" ? 0 : kind == "prod" ? 1 : kind == "min" ? INFINITY : -INFINITY;
  const Shape& s = x.type.shape;
  int64_t inner = contiguous_strides(s)[d], len = s[d], outer = numel(s) / (len * inner);
  HostTensor out{n.type, std::vector<double>(x.data.size())};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = first;
      for (int64_t k = 0; k < len; ++k) {
        int64_t kk = rev ? len - 1 - k : k, idx = (o * len + kk) * inner + i;
        acc = scan_step(kind, acc, x.data[idx]);
        out.data[idx] = acc;
      }
    }
  return out;
}

HostTensor view(const Node& n, const HostTensor& x);

HostTensor permute(const HostTensor& t, const std::vector<int64_t>& dims) {
  Node p{.op = "permute", .attrs = {{"dims", dims}}, .type = {t.type.dtype, permuted(t.type.shape, dims)}};
  return view(p, t);
}

// Node `n` of a channels-last op (ir/conv.h, ir/pool.h) as its NCHW form: its result's type permuted back.
Node channels_first(const Node& n) {
  Node plain = n;
  plain.attrs.erase("channels_last");
  plain.type.shape = permuted(n.type.shape, from_channels_last(n.type.shape.size()));
  return plain;
}

HostTensor pool(const Node& n, const HostTensor& x) {
  if (is_channels_last(n.attrs)) {  // the NCHW pooling between permutes
    const size_t rank = x.type.shape.size();
    return permute(pool(channels_first(n), permute(x, from_channels_last(rank))), to_channels_last(rank));
  }
  bool is_max = n.attr_s("kind") == "max";
  bool include_pad = n.attrs.value("count_include_pad", true);
  const std::vector<PoolDim> dims = pool_dims(n.attrs, x.type.shape, "node '" + n.name + "'");
  const Shape& is = x.type.shape;
  auto istr = contiguous_strides(is);
  Shape taps;
  for (const PoolDim& d : dims) taps.push_back(d.kernel);
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape))};
  CoordIter it(n.type.shape);
  for (size_t i = 0; i < out.data.size(); ++i, it.next()) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0;
    int64_t count = 0, padded_count = 1;
    for (size_t s = 0; s < dims.size(); ++s)  // PyTorch divides by the window clipped to the padded input
      padded_count *= dims[s].end(it.c[2 + s]) - dims[s].first(it.c[2 + s]);
    CoordIter w(taps);
    for (int64_t j = 0; j < numel(taps); ++j, w.next()) {
      int64_t off = it.c[0] * istr[0] + it.c[1] * istr[1];
      bool inside = true;
      for (size_t s = 0; s < dims.size(); ++s) {
        const int64_t pos = dims[s].first(it.c[2 + s]) + w.c[s] * dims[s].dilation;
        inside = inside && dims[s].inside(it.c[2 + s], pos);
        off += pos * istr[2 + s];
      }
      if (!inside) continue;
      double v = x.data[off];
      if (is_max) acc = std::isnan(v) || v > acc ? v : acc;
      else acc += v;
      ++count;
    }
    out.data[i] = is_max ? acc : acc / double(include_pad ? padded_count : count);
  }
  return out;
}

// Convolution by its definition, accumulated in double: out[n, o, p] = bias[o] + sum over the group's input
// channels c and kernel offsets k of x[n, c, p * stride - padding + k * dilation] * w[o, c, k], zero outside.
// Visits the kernel taps of position `at` ([n, ch, *spatial]) of a convolution's output side: for each tap
// that lands inside the input extent d.in, the offset of that input position in the tensor of strides
// `input` (batch and spatial part; the caller adds the channel) and the weight offset from `w_base`. A forward
// convolution reads there; a transposed one, whose `at` is its own input, scatters there.
template <class F>
void for_each_tap(const ConvDims& d, const std::vector<int64_t>& at, const std::vector<int64_t>& input, int64_t w_base,
                  const std::vector<int64_t>& wstr, F&& fn) {
  CoordIter k(d.kernel);
  for (int64_t j = 0, taps = numel(d.kernel); j < taps; ++j, k.next()) {
    int64_t off = at[0] * input[0], woff = w_base;
    bool inside = true;
    for (size_t s = 0; s < d.in.size(); ++s) {
      int64_t pos = at[2 + s] * d.stride[s] - d.padding[s] + k.c[s] * d.dilation[s];
      inside = inside && pos >= 0 && pos < d.in[s];
      off += pos * input[2 + s];
      woff += k.c[s] * wstr[2 + s];
    }
    if (inside) fn(off, woff);
  }
}

HostTensor conv(const Node& n, const std::vector<const HostTensor*>& a);

// A channels-last convolution (ir/conv.h) is the NCHW one between permutes.
HostTensor conv_channels_last(const Node& n, const std::vector<const HostTensor*>& a) {
  const size_t rank = a[0]->type.shape.size();
  HostTensor x = permute(*a[0], from_channels_last(rank)), w = permute(*a[1], from_channels_last(rank));
  std::vector<const HostTensor*> args = {&x, &w};
  if (a.size() > 2) args.push_back(a[2]);
  return permute(conv(channels_first(n), args), to_channels_last(rank));
}

HostTensor conv(const Node& n, const std::vector<const HostTensor*>& a) {
  if (is_channels_last(n.attrs)) return conv_channels_last(n, a);
  const Shape &xs = a[0]->type.shape, &ws = a[1]->type.shape;
  ConvDims d = conv_dims(xs, ws, n.attrs, "interpret: ");
  auto xstr = contiguous_strides(xs), wstr = contiguous_strides(ws);
  int64_t cg = d.c / d.groups, og = d.o / d.groups;
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape))};
  CoordIter it(n.type.shape);
  for (size_t i = 0; i < out.data.size(); ++i, it.next()) {
    int64_t o = it.c[1], g = o / og;
    double acc = a.size() > 2 ? a[2]->data[o] : 0.0;
    for_each_tap(d, it.c, xstr, o * wstr[0], wstr, [&](int64_t xoff, int64_t woff) {
      for (int64_t c = 0; c < cg; ++c) acc += a[0]->data[xoff + (g * cg + c) * xstr[1]] * a[1]->data[woff + c * wstr[1]];
    });
    out.data[i] = acc;
  }
  return out;
}

// Scatter form, PyTorch's definition: input position p and tap k add x * w to result position
// p * stride - padding + k * dilation (a forward convolution's input gradient).
HostTensor conv_transpose(const Node& n, const std::vector<const HostTensor*>& a) {
  const Shape &xs = a[0]->type.shape, &ws = a[1]->type.shape;
  ConvTransposeDims t = conv_transpose_dims(xs, ws, n.attrs, "interpret: ");
  const ConvDims& d = t.forward;
  auto wstr = contiguous_strides(ws), ystr = contiguous_strides(t.result);
  int64_t cin_g = d.o / d.groups, cout_g = d.c / d.groups;
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape), 0.0)};
  if (a.size() > 2)
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = a[2]->data[(int64_t(i) / ystr[1]) % d.c];
  CoordIter it(xs);
  for (size_t i = 0; i < a[0]->data.size(); ++i, it.next()) {
    int64_t ci = it.c[1], g = ci / cin_g;
    for_each_tap(d, it.c, ystr, ci * wstr[0], wstr, [&](int64_t yoff, int64_t woff) {
      for (int64_t co = 0; co < cout_g; ++co)
        out.data[size_t(yoff + (g * cout_g + co) * ystr[1])] += a[0]->data[i] * a[1]->data[size_t(woff + co * wstr[1])];
    });
  }
  return out;
}

HostTensor view(const Node& n, const HostTensor& x) {
  if (n.op == "reshape") return {n.type, x.data};
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape))};
  auto xs = contiguous_strides(x.type.shape);
  CoordIter it(n.type.shape);
  for (size_t i = 0; i < out.data.size(); ++i, it.next()) {
    std::vector<int64_t> src(x.type.shape.size());
    if (n.op == "permute") {
      auto p = n.attr_ints("dims");
      for (size_t j = 0; j < p.size(); ++j) src[p[j]] = it.c[j];
    } else if (n.op == "expand") {
      size_t off = it.c.size() - src.size();
      for (size_t j = 0; j < src.size(); ++j) src[j] = x.type.shape[j] == 1 ? 0 : it.c[off + j];
    } else if (n.op == "slice") {
      src = it.c;
      src[size_t(n.attr_i("dim"))] = n.attr_i("start") + src[size_t(n.attr_i("dim"))] * n.attr_i("step");
    } else {  // flip
      src = it.c;
      for (auto d : n.attr_ints("dims")) src[d] = x.type.shape[d] - 1 - src[d];
    }
    out.data[i] = x.data[dot(src, xs)];
  }
  return out;
}

HostTensor gather(const Node& n, const HostTensor& x, const HostTensor& idx) {
  int64_t d = n.attr_i("dim");
  auto xs = contiguous_strides(x.type.shape);
  HostTensor out{n.type, std::vector<double>(idx.data.size())};
  CoordIter it(idx.type.shape);
  for (size_t i = 0; i < out.data.size(); ++i, it.next()) {
    auto c = it.c;
    int64_t j = int64_t(idx.data[i]);
    if (j < 0 || j >= x.type.shape[d])
      throw UserError("gather '" + n.name + "': index " + std::to_string(j) + " out of range");
    c[d] = j;
    out.data[i] = x.data[dot(c, xs)];
  }
  return out;
}

HostTensor cat(const Node& n, const std::vector<const HostTensor*>& a) {
  const size_t d = size_t(n.attr_i("dim"));
  std::vector<std::vector<int64_t>> strides;
  for (const HostTensor* t : a) strides.push_back(contiguous_strides(t->type.shape));
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape))};
  CoordIter it(n.type.shape);
  for (size_t i = 0; i < out.data.size(); ++i, it.next()) {
    auto c = it.c;
    size_t k = 0;
    while (c[d] >= a[k]->type.shape[d]) c[d] -= a[k++]->type.shape[d];
    out.data[i] = a[k]->data[dot(c, strides[k])];
  }
  return out;
}

HostTensor pad(const Node& n, const HostTensor& x) {
  const PadSpec spec = pad_spec(n, x.type.shape, "interpret: node '" + n.name + "': ");
  const std::vector<int64_t> strides = contiguous_strides(x.type.shape);
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape))};
  CoordIter it(n.type.shape);
  for (size_t i = 0; i < out.data.size(); ++i, it.next()) {
    int64_t at = 0;
    for (size_t d = 0; d < strides.size() && at >= 0; ++d) {
      const int64_t s = pad_source(spec.mode, spec.dims[d], it.c[d]);
      at = s < 0 ? -1 : at + s * strides[d];
    }
    out.data[i] = at < 0 ? round_to(n.type.dtype, spec.value) : x.data[size_t(at)];
  }
  return out;
}

// Canonical matmul (equal ranks >= 2, batch dims broadcast), accumulated in double, then the epilogue.
HostTensor matmul(const Node& n, const std::vector<const HostTensor*>& a) {
  const Shape &as = a[0]->type.shape, &bs = a[1]->type.shape;
  if (as.size() < 2 || as.size() != bs.size())
    throw UserError("interpret: matmul '" + n.name + "' is not in canonical form (equal ranks >= 2); decompose the graph first");
  MatmulDims d = matmul_dims(as, bs, "interpret: ");
  Shape batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
  auto sa = broadcast_strides(batch_a, d.batch), sb = broadcast_strides(batch_b, d.batch);
  Epilogue e = epilogue_from_string(n.attrs.value("epilogue", "none"));
  Node act;
  act.op = e == Epilogue::relu || e == Epilogue::bias_relu ? "relu" : "gelu";
  act.attrs = {{"approximate", "tanh"}};
  bool activate = e != Epilogue::none && e != Epilogue::bias;
  HostTensor out{n.type, std::vector<double>(numel(n.type.shape))};
  CoordIter it(d.batch);
  for (int64_t bi = 0; bi < numel(d.batch); ++bi, it.next()) {
    const double* A = a[0]->data.data() + dot(it.c, sa) * d.m * d.k;
    const double* B = a[1]->data.data() + dot(it.c, sb) * d.k * d.n;
    double* C = out.data.data() + bi * d.m * d.n;
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < d.k; ++k) acc += A[i * d.k + k] * B[k * d.n + j];
        if (has_bias(e)) acc += a[2]->data[j];
        C[i * d.n + j] = activate ? eval_unary(act, acc) : acc;
      }
  }
  return out;
}

// softmax(s) along the last dim, in double: a row that is -inf everywhere gives NaN (0 / 0), as PyTorch's does.
HostTensor softmax_rows(const HostTensor& s) {
  HostTensor p = s;
  const int64_t n = s.type.shape.back(), rows = numel(s.type.shape) / std::max<int64_t>(n, 1);
  for (int64_t r = 0; r < rows; ++r) {
    double* x = p.data.data() + r * n;
    double m = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, x[j]);
    for (int64_t j = 0; j < n; ++j) sum += x[j] = std::exp(x[j] - m);
    for (int64_t j = 0; j < n; ++j) x[j] /= sum;
  }
  return p;
}

}  // namespace

std::vector<HostTensor> interpret(const Graph& g, const std::vector<HostTensor>& inputs,
                                  const std::vector<HostTensor>& params) {
  if (inputs.size() != g.inputs.size() || params.size() != g.params.size())
    throw UserError("interpret: graph takes " + std::to_string(g.inputs.size()) + " inputs and " +
                    std::to_string(g.params.size()) + " params, got " + std::to_string(inputs.size()) +
                    " and " + std::to_string(params.size()));
  std::vector<HostTensor> vals(g.nodes.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) vals[g.inputs[i]] = inputs[i];
  for (size_t i = 0; i < g.params.size(); ++i) vals[g.params[i]] = params[i];
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.nodes[id];
    if (n.op == "input" || n.op == "param") {
      if (vals[id].type.shape != n.type.shape || vals[id].data.size() != size_t(numel(n.type.shape)))
        throw UserError("interpret: value '" + n.name + "' should have shape " + to_string(n.type.shape) +
                        ", got " + to_string(vals[id].type.shape));
      continue;
    }
    std::vector<const HostTensor*> a;
    for (int x : n.args) a.push_back(x >= 0 ? &vals[x] : nullptr);  // -1: an absent optional argument
    if (n.op == "const") vals[id] = {n.type, {n.attr_f("value")}};
    else if (n.op == "gather") vals[id] = gather(n, *a[0], *a[1]);
    else if (n.op == "cat") vals[id] = cat(n, a);
    else if (n.op == "pad") vals[id] = pad(n, *a[0]);
    else if (is_elementwise_op(n.op)) vals[id] = elementwise(n, a);
    else if (n.op == "reduce") vals[id] = reduce(n, *a[0]);
    else if (n.op == "scan") vals[id] = scan(n, *a[0]);
    else if (n.op == "pool") vals[id] = pool(n, *a[0]);
    else if (n.op == "matmul" || n.op == "attention_scores") vals[id] = matmul(n, a);
    else if (n.op == "attention") {
      const HostTensor p = softmax_rows(*a[0]);
      vals[id] = matmul(n, {&p, a[1]});
    }
    else if (n.op == "recurrence") vals[id] = run_recurrence(n, recurrence_dims(g, n), a);
    else if (is_conv_op(n.op)) {
      vals[id] = n.op == "conv" ? conv(n, a) : conv_transpose(n, a);
      if (auto act = conv_activation(n)) vals[id] = elementwise(*act, {&vals[id]});
    }
    else if (is_view_op(n.op)) vals[id] = view(n, *a[0]);
    else throw UserError("interpret: '" + n.name + "' is a high-level op (" + n.op + "); decompose the graph first");
    if (is_half(n.type.dtype) && !is_elementwise_op(n.op) && !is_view_op(n.op)) {  // a library result kept in 16 bits
      vals[id].type = n.type;
      for (double& v : vals[id].data) v = round_to(n.type.dtype, v);
    }
  }
  std::vector<HostTensor> out;
  for (int o : g.outputs) out.push_back(vals[o]);
  return out;
}

}  // namespace kforge
