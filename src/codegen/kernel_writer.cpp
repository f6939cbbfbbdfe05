#include "codegen/kernel_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "ir/error.h"
#include "ir/ops.h"
#include "ir/pad.h"

namespace kforge {

std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "KF_INF" : "(-KF_INF)";
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9e", v);
  return std::string(buf) + "f";
}

KernelWriter::KernelWriter(const Partition& p, const KernelGroup& k, const std::map<int, int>& buffer_of_owner)
    : p_(p), g_(*p.graph), k_(k), buffer_of_owner_(buffer_of_owner) {
  for (auto v : {&k.stats, &k.elem_outputs, &k.row_outputs}) members_.insert(v->begin(), v->end());
}

void KernelWriter::begin_site(std::vector<std::string> coords, std::string linear, std::string indent) {
  coords_ = std::move(coords);
  linear_ = std::move(linear);
  indent_ = std::move(indent);
  suffix_rank_ = 0;
  memo_.clear();
}

std::string KernelWriter::take() {
  std::string s = body_.str();
  body_.str("");
  return s;
}

std::string KernelWriter::ctype(int node) const {
  switch (g_.at(node).type.dtype) {
    case DType::f32: return "float";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
    case DType::f16:
    case DType::bf16: return "unsigned short";  // bit patterns, converted by the prelude's kf_to_* / kf_from_*
  }
  return "?";
}

DType KernelWriter::buffer_dtype(int id) const {
  if (declared_type_.count(id)) return DType::f32;
  for (auto& [owner, b] : buffer_of_owner_)
    if (b == id) return g_.at(owner).type.dtype;
  return DType::f32;
}

int KernelWriter::buffer_id(int node) const {
  auto it = buffer_of_owner_.find(p_.storage[node]);
  KF_ASSERT(it != buffer_of_owner_.end(), "no buffer for '" + g_.at(node).name + "'");
  return it->second;
}

void KernelWriter::use_buffer(int id, bool writable) {
  if (std::find(used_.begin(), used_.end(), id) == used_.end()) used_.push_back(id);
  writable_[id] = writable_[id] || writable;
}

void KernelWriter::declare_buffer(int id, const std::string& t, bool writable) {
  declared_type_[id] = t;
  use_buffer(id, writable);
}

std::string KernelWriter::buf(int node) { return "b" + std::to_string(buffer_id(node)); }

std::string KernelWriter::params() const {
  // Types come from the buffer's owner node; the map is inverted once here.
  std::map<int, int> owner_of;
  for (auto& [owner, b] : buffer_of_owner_) owner_of[b] = owner;
  std::string s;
  for (int b : used_) {
    std::string t = declared_type_.count(b) ? declared_type_.at(b) : ctype(owner_of.at(b));
    if (!s.empty()) s += ", ";
    s += (writable_.at(b) ? t + "* __restrict__ " : "const " + t + "* __restrict__ ") + "b" + std::to_string(b);
  }
  return s;
}

std::string KernelWriter::coord_of(size_t i, size_t rank) const {
  size_t s = coords_.size();
  KF_ASSERT(rank <= s, "value of rank " + std::to_string(rank) + " in a kernel of rank " + std::to_string(s));
  return coords_[s - rank + i];
}

std::string KernelWriter::offset_expr(const Access& a, const Shape& iter) {
  if (!linear_.empty() && a.contiguous() && a.shape == iter) return linear_;
  if (suffix_rank_ > 0 && a.shape.size() == suffix_rank_ && suffix_rank_ <= iter.size() && a.contiguous() &&
      std::equal(a.shape.begin(), a.shape.end(), iter.end() - long(suffix_rank_)))
    return suffix_index_;
  std::string e = a.offset ? std::to_string(a.offset) : "";
  for (size_t i = 0; i < a.shape.size(); ++i) {
    if (a.shape[i] == 1 || a.strides[i] == 0) continue;
    std::string term = "(i64)" + coord_of(i, a.shape.size()) + " * " + std::to_string(a.strides[i]);
    e += (e.empty() ? "" : " + ") + term;
  }
  return e.empty() ? "0" : e;
}

std::string KernelWriter::out_index(int node) {
  Access a = access_of(p_, node);
  use_buffer(buffer_id(node), true);
  return offset_expr(a, k_.shape);
}

std::string KernelWriter::load(int node, bool through_self) {
  Access a = access_of(p_, node, through_self);
  int b = buffer_id(a.owner);
  use_buffer(b, false);
  std::string off = offset_expr(a, k_.shape);
  // Vector loads serve f32 and half-precision buffers: a bool or i64 buffer has other element sizes.
  const DType stored = g_.at(a.owner).type.dtype;
  if (off == linear_ && !linear_.empty() && is_float(stored)) {
    (stored == DType::f32 ? contiguous_reads_ : contiguous_half_reads_).insert(b);
    if (auto it = vector_src_.find(b); it != vector_src_.end()) return it->second;
  }
  if (suffix_rank_ > 0 && off == suffix_index_ && g_.at(a.owner).type.dtype == DType::f32) {
    suffix_reads_.insert(b);
    if (auto it = suffix_src_.find(b); it != suffix_src_.end()) return it->second;
  }
  return "b" + std::to_string(b) + "[" + off + "]";
}

std::string KernelWriter::gather(const Node& n) {
  // out[c] = table[c with dim d replaced by index[c]]; the table is stored (partition.cpp).
  Access a = access_of(p_, n.args[0]);
  std::string idx = value(n.args[1]);
  int64_t d = n.attr_i("dim");
  int b = buffer_id(a.owner);
  use_buffer(b, false);
  std::string e = std::to_string(a.offset);
  for (size_t i = 0; i < a.shape.size(); ++i) {
    std::string c = int64_t(i) == d ? "(" + idx + ")" : coord_of(i, n.type.shape.size());
    if (int64_t(i) != d && n.type.shape[i] == 1) continue;
    e += " + (i64)" + c + " * " + std::to_string(a.strides[i]);
  }
  return "b" + std::to_string(b) + "[" + e + "]";
}

std::string KernelWriter::cat(const Node& n) {
  // out[c] = part k[c with c_d - start_k] for the part k whose range along dim d holds c_d; the parts are stored
  // (partition.cpp), and only the chosen part's load runs.
  const size_t rank = n.type.shape.size(), d = size_t(n.attr_i("dim"));
  const std::string cd = "(i64)" + coord_of(d, rank);
  std::string e, close;
  int64_t start = 0;
  for (size_t k = 0; k < n.args.size(); ++k) {
    std::string load;
    if (const int c = is_readable(p_, n.args[k]) ? -1 : const_through_views(g_, n.args[k]); c >= 0) {
      load = value(c);  // one value throughout the part (a literal tensor's element): nothing stored
    } else {
      Access a = access_of(p_, n.args[k]);
      int b = buffer_id(a.owner);
      use_buffer(b, false);
      std::string index = std::to_string(a.offset);
      for (size_t i = 0; i < rank; ++i) {
        if (i != d && n.type.shape[i] == 1) continue;
        std::string c = i == d ? "(" + cd + " - " + std::to_string(start) + "LL)" : coord_of(i, rank);
        index += " + (i64)" + c + " * " + std::to_string(a.strides[i]);
      }
      load = "b" + std::to_string(b) + "[" + index + "]";
    }
    start += g_.at(n.args[k]).type.shape[d];
    if (k + 1 == n.args.size()) {
      e += load;
    } else {
      e += "(" + cd + " < " + std::to_string(start) + "LL ? " + load + " : ";
      close += ")";
    }
  }
  return e + close;
}

std::string KernelWriter::pad(const Node& n) {
  // out[c] = x[source(c)], each dim's coordinate mirrored, clamped or wrapped into x (ir/pad.h), or the fill where
  // constant mode puts c outside x. x is stored (partition.cpp), a view of stored memory, or elementwise arithmetic
  // computed here at the source coordinates.
  const size_t rank = n.type.shape.size();
  const PadSpec spec = pad_spec(n, g_.at(n.args[0]).type.shape, "node '" + n.name + "': ");
  std::string load, inside;
  for (size_t i = 0; i < rank && spec.mode == PadMode::constant; ++i)
    if (std::string in = pad_inside_expr(spec.dims[i], "(i64)" + coord_of(i, rank)); !in.empty())
      inside += (inside.empty() ? "" : " && ") + in;
  const bool stored = is_readable(p_, n.args[0]);
  if (const int c = stored ? -1 : const_through_views(g_, n.args[0]); c >= 0) {
    load = value(c);
  } else if (stored) {
    const Access a = access_of(p_, n.args[0]);
    const int b = buffer_id(a.owner);
    use_buffer(b, false);
    std::string index = std::to_string(a.offset);
    for (size_t i = 0; i < rank; ++i) {
      if (a.shape[i] == 1) continue;  // every mode reads a dim of one element at 0
      const std::string source = pad_source_expr(spec.mode, spec.dims[i], "(i64)" + coord_of(i, rank));
      index += " + " + source + " * " + std::to_string(a.strides[i]);
    }
    load = "b" + std::to_string(b) + "[" + index + "]";
  } else {
    load = at_source_coordinates(n, spec);
  }
  if (inside.empty()) return load;
  const DType t = n.type.dtype;
  const std::string fill = t == DType::f32 ? float_literal(spec.value)
                           : is_half(t)    ? "((unsigned short)" + std::to_string(half_bits(t, spec.value)) + ")"
                                           : "((" + std::string(t == DType::i64 ? "i64" : "bool") + ")" +
                                                 std::to_string(int64_t(spec.value)) + ")";
  return "(" + inside + " ? " + load + " : " + fill + ")";
}

std::string KernelWriter::at_source_coordinates(const Node& n, const PadSpec& spec) {
  // The padding's elementwise input evaluated at its source coordinates: the site's coordinates swapped for the
  // mapped ones (constant mode's clamped into x: the fill is chosen outside), its locals apart from the site's
  // (they hold values at other coordinates), and no contiguous reads (none is at the site's linear index).
  const size_t rank = n.type.shape.size(), s = coords_.size();
  const std::vector<std::string> site = coords_;
  const std::map<int, std::string> memo = std::exchange(memo_, {});
  const std::string linear = std::exchange(linear_, "");
  const size_t suffix = std::exchange(suffix_rank_, 0);
  const std::string prefix = "s" + std::to_string(counter_++) + "_";
  for (size_t i = 0; i < rank; ++i) {
    const std::string c = prefix + std::to_string(i);
    const std::string source = pad_source_expr(spec.mode, spec.dims[i], "(i64)" + site[s - rank + i]);
    body_ << indent_ << "const i64 " << c << " = " << source << ";  // " << n.name << "'s source\n";
    coords_[s - rank + i] = c;
  }
  const std::string v = value(n.args[0]);
  coords_ = site, memo_ = memo, linear_ = linear, suffix_rank_ = suffix;
  return v;
}

std::string unary_expression(const Node& n, const std::string& x) {
  const std::string& op = n.op;
  auto f = [&](const std::string& k) { return float_literal(n.attr_f(k)); };
  if (op == "relu") return "(" + x + " > 0.f || " + x + " != " + x + " ? " + x + " : 0.f)";  // NaN stays NaN
  if (op == "sigmoid") return "kf_sigmoid(" + x + ")";
  // CUDA's single-precision maths library, one function each (round: rintf, half to even as torch).
  static const std::map<std::string, std::string> libm = {
      {"tanh", "tanhf"},   {"exp", "expf"},     {"log", "logf"},     {"sqrt", "sqrtf"},   {"rsqrt", "rsqrtf"},
      {"erf", "erff"},     {"sin", "sinf"},     {"cos", "cosf"},     {"floor", "floorf"}, {"ceil", "ceilf"},
      {"round", "rintf"},  {"trunc", "truncf"}, {"log1p", "log1pf"}, {"expm1", "expm1f"}, {"tan", "tanf"},
      {"atan", "atanf"},   {"asin", "asinf"},   {"acos", "acosf"},   {"sinh", "sinhf"},   {"cosh", "coshf"}};
  if (auto fn = libm.find(op); fn != libm.end()) return fn->second + "(" + x + ")";
  if (op == "abs") return n.type.dtype == DType::f32 ? "fabsf(" + x + ")" : "(" + x + " < 0 ? -" + x + " : " + x + ")";
  if (op == "neg") return "(-" + x + ")";
  if (op == "reciprocal") return "(1.f / " + x + ")";
  if (op == "square") return "(" + x + " * " + x + ")";
  if (op == "sign") return "kf_sign(" + x + ")";
  if (op == "silu") return "(" + x + " * kf_sigmoid(" + x + "))";
  if (op == "softsign") return "(" + x + " / (1.f + fabsf(" + x + ")))";
  if (op == "selu") return "kf_selu(" + x + ")";
  if (op == "hardsigmoid") return "fminf(fmaxf(" + x + " / 6.f + 0.5f, 0.f), 1.f)";
  if (op == "hardswish") return "(" + x + " * fminf(fmaxf(" + x + " + 3.f, 0.f), 6.f) / 6.f)";
  if (op == "mish") return "(" + x + " * tanhf(kf_softplus(" + x + ", 1.f, 20.f)))";
  if (op == "gelu")
    return n.attrs.value("approximate", "none") == "tanh" ? "kf_gelu_tanh(" + x + ")" : "kf_gelu(" + x + ")";
  if (op == "leaky_relu") return "(" + x + " > 0.f ? " + x + " : " + x + " * " + f("negative_slope") + ")";
  if (op == "elu") return "(" + x + " > 0.f ? " + x + " : " + f("alpha") + " * expm1f(" + x + "))";
  if (op == "hardtanh") return "fminf(fmaxf(" + x + ", " + f("min_val") + "), " + f("max_val") + ")";
  if (op == "softplus") return "kf_softplus(" + x + ", " + f("beta") + ", " + f("threshold") + ")";
  if (op == "clamp") {
    std::string e = x;
    if (n.has_attr("min")) e = "fmaxf(" + e + ", " + f("min") + ")";
    if (n.has_attr("max")) e = "fminf(" + e + ", " + f("max") + ")";
    return e;
  }
  if (op == "pow_scalar") {
    double e = n.attr_f("exponent");
    if (e == 2) return "(" + x + " * " + x + ")";
    if (e == 1) return x;
    if (e == 0.5) return "sqrtf(" + x + ")";
    return "powf(" + x + ", " + float_literal(e) + ")";
  }
  if (op == "cast") {
    const char* t = n.type.dtype == DType::f32 ? "float" : n.type.dtype == DType::i64 ? "i64" : "bool";
    return std::string("((") + t + ")(" + x + "))";
  }
  throw InternalError("codegen: no CUDA form for unary op '" + op + "'");
}

std::string half_cast(DType from, DType to, const std::string& x) {
  std::string f = from == DType::f16 ? "kf_from_f16(" + x + ")" : from == DType::bf16 ? "kf_from_bf16(" + x + ")"
                                                                                       : "((float)(" + x + "))";
  if (to == DType::f16) return "kf_to_f16(" + f + ")";
  if (to == DType::bf16) return "kf_to_bf16(" + f + ")";
  if (to == DType::f32) return f;
  return "((" + std::string(to == DType::i64 ? "i64" : "bool") + ")(" + f + "))";
}

std::string KernelWriter::value(int id) {
  if (auto it = bound_.find(id); it != bound_.end()) return it->second;
  if (auto it = memo_.find(id); it != memo_.end()) return it->second;
  const Node& n = g_.at(id);
  bool inline_here = !p_.stored[id] || (members_.count(id) && n.op != "reduce" && n.op != "scan" && n.op != "pool");
  if (n.op == "const") {
    if (n.type.dtype == DType::f32) return float_literal(n.attr_f("value"));
    return "((" + ctype(id) + ")" + std::to_string(int64_t(n.attr_f("value"))) + ")";
  }
  if (members_.count(id) && is_view_op(n.op)) return load(id, true);  // a stored view reads its source
  if (is_view_op(n.op) && !p_.stored[id] && !is_readable(p_, id))
    if (const int c = const_through_views(g_, id); c >= 0) return value(c);  // an expanded scalar is the scalar
  if (!inline_here || !is_elementwise_op(n.op)) {
    if (is_readable(p_, id)) return load(id);
    throw InternalError("codegen: '" + n.name + "' (" + n.op + ") is neither computable here nor stored");
  }
  std::string e;
  if (n.op == "gather") {
    e = gather(n);
  } else if (n.op == "cat") {
    e = cat(n);
  } else if (n.op == "pad") {
    e = pad(n);
  } else if (n.op == "triangle") {  // the site's (row, col) in the last two dims against the diagonal
    const size_t rank = n.type.shape.size();
    const std::string offset = "((i64)" + coord_of(rank - 1, rank) + " - (i64)" + coord_of(rank - 2, rank) + ")";
    e = "(" + offset + (n.attr_b("upper") ? " >= " : " <= ") + std::to_string(n.attr_i("diagonal")) + "LL ? " +
        value(n.args[0]) + " : (" + ctype(id) + ")0)";
  } else if (n.op == "where") {
    e = "(" + value(n.args[0]) + " ? " + value(n.args[1]) + " : " + value(n.args[2]) + ")";
  } else if (is_binary_op(n.op)) {
    std::string a = value(n.args[0]), b = value(n.args[1]);
    static const std::map<std::string, std::string> infix = {
        {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}, {"gt", ">"}, {"lt", "<"},
        {"ge", ">="}, {"le", "<="}, {"eq", "=="}, {"ne", "!="}};
    if (auto it = infix.find(n.op); it != infix.end()) e = "(" + a + " " + it->second + " " + b + ")";
    else if (n.op == "maximum") e = "kf_max(" + a + ", " + b + ")";
    else if (n.op == "minimum") e = "kf_min(" + a + ", " + b + ")";
    else if (n.op == "fmod") e = "fmodf(" + a + ", " + b + ")";
    else if (n.op == "atan2") e = "atan2f(" + a + ", " + b + ")";
    else e = "powf(" + a + ", " + b + ")";
  } else if (n.op == "cast" && (is_half(n.type.dtype) || is_half(g_.at(n.args[0]).type.dtype))) {
    e = half_cast(g_.at(n.args[0]).type.dtype, n.type.dtype, value(n.args[0]));
  } else {
    e = unary_expression(n, value(n.args[0]));
  }
  std::string var = "v" + std::to_string(counter_++);
  body_ << indent_ << "const " << ctype(id) << " " << var << " = " << e << ";  // " << n.name << "\n";
  memo_[id] = var;
  return var;
}

}  // namespace kforge
