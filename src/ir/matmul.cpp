#include "ir/matmul.h"

#include "ir/error.h"

namespace kforge {

MatmulDims matmul_dims(const Shape& a, const Shape& b, const std::string& where) {
  auto fail = [&](const std::string& why) -> void {
    throw UserError(where + "matmul of " + to_string(a) + " and " + to_string(b) + ": " + why);
  };
  if (a.empty() || b.empty()) fail("both operands need at least 1 dim (torch.matmul refuses 0-d tensors)");
  MatmulDims d;
  d.a_vector = a.size() == 1;
  d.b_vector = b.size() == 1;
  d.m = d.a_vector ? 1 : a[a.size() - 2];
  d.k = a.back();
  int64_t kb = d.b_vector ? b[0] : b[b.size() - 2];
  d.n = d.b_vector ? 1 : b.back();
  if (d.k != kb)
    fail("inner dims differ (a has " + std::to_string(d.k) + " columns, b has " + std::to_string(kb) + " rows)");
  Shape batch_a(a.begin(), a.end() - (d.a_vector ? 1 : 2));
  Shape batch_b(b.begin(), b.end() - (d.b_vector ? 1 : 2));
  try {
    d.batch = broadcast_shapes(batch_a, batch_b);
  } catch (const UserError& e) {
    fail(std::string("batch dims do not broadcast: ") + e.what());
  }
  d.result = d.batch;
  if (!d.a_vector) d.result.push_back(d.m);
  if (!d.b_vector) d.result.push_back(d.n);
  return d;
}

bool is_matrix_transpose(const Graph& g, int id) {
  const Node& n = g.at(id);
  if (n.op != "permute") return false;
  auto dims = n.attr_ints("dims");
  size_t r = dims.size();
  if (r < 2 || dims[r - 2] != int64_t(r - 1) || dims[r - 1] != int64_t(r - 2)) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (dims[i] != int64_t(i)) return false;
  return true;
}

namespace {
const std::pair<Epilogue, const char*> kNames[] = {
    {Epilogue::none, "none"}, {Epilogue::bias, "bias"},           {Epilogue::relu, "relu"},
    {Epilogue::bias_relu, "bias_relu"}, {Epilogue::gelu, "gelu"}, {Epilogue::bias_gelu, "bias_gelu"}};
}  // namespace

std::string to_string(Epilogue e) {
  for (auto& [v, name] : kNames)
    if (v == e) return name;
  return "?";
}

Epilogue epilogue_from_string(const std::string& s) {
  for (auto& [v, name] : kNames)
    if (s == name) return v;
  throw UserError("unknown matmul epilogue '" + s + "' (none, bias, relu, bias_relu, gelu, bias_gelu)");
}

bool has_bias(Epilogue e) { return e == Epilogue::bias || e == Epilogue::bias_relu || e == Epilogue::bias_gelu; }

Epilogue with_activation(Epilogue e, const std::string& activation) {
  bool relu = activation == "relu";
  if (e == Epilogue::none) return relu ? Epilogue::relu : Epilogue::gelu;
  if (e == Epilogue::bias) return relu ? Epilogue::bias_relu : Epilogue::bias_gelu;
  return e;
}

}  // namespace kforge
