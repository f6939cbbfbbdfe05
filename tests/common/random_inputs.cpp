#include "common/random_inputs.h"

#include <cstring>

namespace kforge::testing {

namespace {
// Ops whose inputs must stay near one (products) or need class indices.
bool feeds(const Graph& g, int id, const std::string& op) {
  for (auto& n : g.nodes)
    for (int a : n.args)
      if (a == id && n.op == op) return true;
  return false;
}
}  // namespace

std::vector<HostTensor> random_values(const Graph& g, const std::vector<int>& ids, std::mt19937_64& rng) {
  std::vector<HostTensor> out;
  for (int id : ids) {
    const Node& n = g.at(id);
    HostTensor t{n.type, std::vector<double>(size_t(numel(n.type.shape)))};
    bool near_one = feeds(g, id, "cumprod") || feeds(g, id, "prod");
    int64_t classes = 1;
    for (auto& m : g.nodes)
      if (m.op == "cross_entropy" && m.args[1] == id) classes = g.at(m.args[0]).type.shape[1];
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    for (auto& v : t.data) {
      if (n.type.dtype == DType::boolean) v = rng() % 2;
      else if (n.type.dtype == DType::i64) v = double(rng() % uint64_t(classes));
      else v = round_to(is_half(n.type.dtype) ? n.type.dtype : DType::f32, near_one ? 1.0 + 0.02 * u(rng) : u(rng));
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string to_bytes(const HostTensor& t) {
  std::string b(t.data.size() * dtype_size(t.type.dtype), '\0');
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (t.type.dtype == DType::f32) {
      float f = float(t.data[i]);
      std::memcpy(&b[i * 4], &f, 4);
    } else if (t.type.dtype == DType::i64) {
      int64_t x = int64_t(t.data[i]);
      std::memcpy(&b[i * 8], &x, 8);
    } else if (is_half(t.type.dtype)) {
      uint16_t h = half_bits(t.type.dtype, t.data[i]);
      std::memcpy(&b[i * 2], &h, 2);
    } else {
      b[i] = t.data[i] != 0;
    }
  }
  return b;
}

std::vector<double> from_bytes(const std::string& b, DType dtype) {
  size_t es = dtype_size(dtype), n = b.size() / es;
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DType::f32) {
      float f;
      std::memcpy(&f, &b[i * 4], 4);
      v[i] = f;
    } else if (dtype == DType::i64) {
      int64_t x;
      std::memcpy(&x, &b[i * 8], 8);
      v[i] = double(x);
    } else if (is_half(dtype)) {
      uint16_t h;
      std::memcpy(&h, &b[i * 2], 2);
      v[i] = half_value(dtype, h);
    } else {
      v[i] = b[i] != 0;
    }
  }
  return v;
}

void scale_values(std::vector<HostTensor>& set, double factor) {
  for (auto& t : set)
    for (auto& x : t.data) x = float(x * factor);
}

}  // namespace kforge::testing
