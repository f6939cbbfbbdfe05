#include "ir/recurrence.h"

#include <cmath>

#include "ir/error.h"
#include "ir/interpreter.h"

namespace kforge {

Cell cell_from_string(const std::string& s, const std::string& where) {
  if (s == "lstm") return Cell::lstm;
  if (s == "gru") return Cell::gru;
  if (s == "rnn_tanh") return Cell::rnn_tanh;
  if (s == "rnn_relu") return Cell::rnn_relu;
  throw UserError(where + "unknown cell '" + s + "' (lstm, gru, rnn_tanh or rnn_relu)");
}

std::string to_string(Cell c) {
  switch (c) {
    case Cell::lstm: return "lstm";
    case Cell::gru: return "gru";
    case Cell::rnn_tanh: return "rnn_tanh";
    case Cell::rnn_relu: return "rnn_relu";
  }
  return "?";
}

int gate_count(Cell c) { return c == Cell::lstm ? 4 : c == Cell::gru ? 3 : 1; }

RecurrenceDims recurrence_dims(const Graph& g, const Node& n) {
  const std::string where = "node '" + n.name + "' (op recurrence): ";
  RecurrenceDims d;
  d.cell = cell_from_string(n.attr_s("cell"), where);
  d.gates = gate_count(d.cell);
  d.reverse = n.has_attr("reverse") && n.attr_b("reverse");
  const std::string state = n.has_attr("state") ? n.attr_s("state") : "h";
  if (state != "h" && state != "c" && state != "hc") throw UserError(where + "state must be 'h', 'c' or 'hc', got '" + state + "'");
  d.keeps_h = state != "c";
  d.keeps_c = state != "h";
  if (d.keeps_c && d.cell != Cell::lstm) throw UserError(where + "state '" + state + "' is an LSTM's (its cell state)");
  d.directions = n.has_attr("directions") ? int(n.attr_i("directions")) : 1;
  if (d.directions != 1 && d.directions != 2) throw UserError(where + "directions must be 1 or 2");
  if (d.directions == 2 && d.reverse) throw UserError(where + "reverse is for one direction (with two, the second walks backward)");
  if (n.args.size() != kRecArgs * size_t(d.directions))
    throw UserError(where + "takes 5 arguments a direction [x, w_hh, h0, c0, b_hh] (-1 for absent ones), got " +
                    std::to_string(n.args.size()) + " for " + std::to_string(d.directions));
  for (int dir = 0; dir < d.directions; ++dir) {
    const size_t at = kRecArgs * size_t(dir);
    const std::string in = d.directions == 2 ? (dir ? " (backward)" : " (forward)") : "";
    auto operand = [&](size_t i, const std::string& what, bool required) -> const TensorType* {
      if (n.args[at + i] < 0) {
        if (required) throw UserError(where + what + in + " is missing");
        return nullptr;
      }
      const TensorType& t = g.at(n.args[at + i]).type;
      if (t.dtype != DType::f32) throw UserError(where + what + in + " must be f32, got " + to_string(t.dtype));
      return &t;
    };
    const TensorType& x = *operand(kRecX, "x", true);
    const TensorType& w = *operand(kRecW, "w_hh", true);
    if (x.shape.size() != 3 || w.shape.size() != 2)
      throw UserError(where + "x must be [T, N, G*H] and w_hh [G*H, H], got " + to_string(x.shape) + " and " + to_string(w.shape) + in);
    if (dir == 0) d.steps = x.shape[0], d.batch = x.shape[1], d.hidden = w.shape[1];
    const int64_t gh = d.gates * d.hidden;
    if (w.shape != Shape{gh, d.hidden} || x.shape != Shape{d.steps, d.batch, gh})
      throw UserError(where + "a " + to_string(d.cell) + " of hidden size " + std::to_string(d.hidden) + " over " + std::to_string(d.steps) +
                      " steps of " + std::to_string(d.batch) + " needs x " + to_string(Shape{d.steps, d.batch, gh}) + " and w_hh " +
                      to_string(Shape{gh, d.hidden}) + ", got " + to_string(x.shape) + " and " + to_string(w.shape) + in);
    const Shape state_shape{d.batch, d.hidden};
    const TensorType* h0 = operand(kRecH0, "h0", false);
    if (h0 && h0->shape != state_shape) throw UserError(where + "h0 must be " + to_string(state_shape) + ", got " + to_string(h0->shape) + in);
    const TensorType* c0 = operand(kRecC0, "c0", false);
    if (c0 && d.cell != Cell::lstm) throw UserError(where + "c0 is an LSTM's only");
    if (c0 && c0->shape != state_shape) throw UserError(where + "c0 must be " + to_string(state_shape) + ", got " + to_string(c0->shape) + in);
    const TensorType* b = operand(kRecBias, "b_hh", false);
    if (b && b->shape != Shape{gh}) throw UserError(where + "b_hh must be [" + std::to_string(gh) + "], got " + to_string(b->shape) + in);
    if (dir == 0) {
      d.bias = b != nullptr, d.h0 = h0 != nullptr, d.c0 = c0 != nullptr;
    } else if (d.bias != (b != nullptr) || d.h0 != (h0 != nullptr) || d.c0 != (c0 != nullptr)) {
      throw UserError(where + "the two directions must both have, or both lack, b_hh, h0 and c0");
    }
  }
  if (d.steps < 1 || d.batch < 1 || d.hidden < 1) throw UserError(where + "needs at least one step, batch row and hidden unit");
  return d;
}

HostTensor run_recurrence(const Node& n, const RecurrenceDims& d, const std::vector<const HostTensor*>& args) {
  const int64_t T = d.steps, N = d.batch, H = d.hidden, G = d.gates, D = d.directions;
  const int64_t S = d.states();
  HostTensor out{n.type, std::vector<double>(size_t(T * N * d.width()))};
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int dir = 0; dir < D; ++dir) {
    const HostTensor* const* a = args.data() + kRecArgs * size_t(dir);
    std::vector<double> h = a[kRecH0] ? a[kRecH0]->data : std::vector<double>(size_t(N * H));
    std::vector<double> c = a[kRecC0] ? a[kRecC0]->data : std::vector<double>(size_t(N * H));
    const auto& x = a[kRecX]->data;
    const auto& w = a[kRecW]->data;
    std::vector<double> rec(size_t(N * G * H)), next(size_t(N * H));
    for (int64_t s = 0; s < T; ++s) {
      const int64_t t = d.backward(dir) ? T - 1 - s : s;
      for (int64_t b = 0; b < N; ++b)  // rec = h W_hh^T + b_hh
        for (int64_t r = 0; r < G * H; ++r) {
          double acc = a[kRecBias] ? a[kRecBias]->data[size_t(r)] : 0.0;
          for (int64_t k = 0; k < H; ++k) acc += h[size_t(b * H + k)] * w[size_t(r * H + k)];
          rec[size_t(b * G * H + r)] = acc;
        }
      for (int64_t b = 0; b < N; ++b)
        for (int64_t u = 0; u < H; ++u) {
          auto xg = [&](int64_t q) { return x[size_t((t * N + b) * G * H + q * H + u)]; };
          auto hg = [&](int64_t q) { return rec[size_t(b * G * H + q * H + u)]; };
          const size_t i = size_t(b * H + u);
          switch (d.cell) {
            case Cell::lstm: {
              const double ig = sigmoid(xg(0) + hg(0)), fg = sigmoid(xg(1) + hg(1)), gg = std::tanh(xg(2) + hg(2)),
                           og = sigmoid(xg(3) + hg(3));
              c[i] = fg * c[i] + ig * gg;
              next[i] = og * std::tanh(c[i]);
              break;
            }
            case Cell::gru: {
              const double r = sigmoid(xg(0) + hg(0)), z = sigmoid(xg(1) + hg(1)), nn = std::tanh(xg(2) + r * hg(2));
              next[i] = (1 - z) * nn + z * h[i];
              break;
            }
            case Cell::rnn_tanh: next[i] = std::tanh(xg(0) + hg(0)); break;
            case Cell::rnn_relu: next[i] = std::max(0.0, xg(0) + hg(0)); break;
          }
        }
      h = next;
      for (int64_t b = 0; b < N; ++b) {
        auto at = out.data.begin() + ((t * N + b) * D + dir) * S * H;
        if (d.keeps_h) at = std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, at);
        if (d.keeps_c) std::copy(c.begin() + b * H, c.begin() + (b + 1) * H, at);
      }
    }
  }
  return out;
}

}  // namespace kforge
