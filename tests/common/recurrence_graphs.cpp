#include "common/recurrence_graphs.h"

#include <cmath>

#include "common/graph_json.h"
#include "ir/recurrence.h"

namespace kforge::testing {

nlohmann::json recurrence_graph(const RecurrenceCase& c) {
  const int64_t G = gate_count(cell_from_string(c.cell, "")), T = c.steps, N = c.batch, H = c.hidden;
  nlohmann::json inputs = {value("x", {T, N, G * H})};
  if (c.initial) inputs.push_back(value("h0", {N, H}));
  if (c.initial && c.cell == "lstm") inputs.push_back(value("c0", {N, H}));
  nlohmann::json params = {value("w", {G * H, H})};
  if (c.bias) params.push_back(value("b", {G * H}));
  nlohmann::json nodes = {node("scale", "const", {}, {{"value", 1.0 / std::sqrt(double(H))}}),
                          node("ws", "mul", {"w", "scale"})};
  nodes.push_back(node("y", "recurrence", {"x", "ws", c.initial ? "h0" : "", c.initial && c.cell == "lstm" ? "c0" : "", c.bias ? "b" : ""},
                       {{"cell", c.cell}, {"reverse", c.reverse}, {"state", c.state_c ? "c" : "h"}}));
  return {{"inputs", inputs}, {"params", params}, {"nodes", nodes}, {"outputs", {"y"}}};
}

std::vector<RecurrenceCase> small_recurrence_cases() {
  return {{"lstm", "lstm"},
          {"lstm_reverse_cell_state", "lstm", 4, 2, 24, true, true},
          {"lstm_zero_states", "lstm", 4, 3, 16, false, false, true, false},
          {"gru_reverse_no_bias", "gru", 6, 3, 40, true, false, false},
          {"gru", "gru", 5, 4, 16},
          {"rnn_tanh", "rnn_tanh", 7, 2, 33},
          {"rnn_relu_no_bias_zero_state", "rnn_relu", 5, 3, 20, false, false, false, false}};
}

std::vector<RecurrenceCase> gpu_recurrence_cases() {
  std::vector<RecurrenceCase> out = small_recurrence_cases();
  out.push_back({"lstm_256_zero_states", "lstm", 32, 16, 256, false, false, true, false});
  out.push_back({"lstm_256_reverse_cell_state", "lstm", 16, 16, 256, true, true});
  out.push_back({"gru_batch_600", "gru", 6, 600, 64});  // the hidden state staged 32 columns at a time
  out.push_back({"rnn_tanh_1024", "rnn_tanh", 8, 4, 1024});
  out.push_back({"lstm_1024", "lstm", 4, 4, 1024});  // 16 units a block hold 262 KB of weights: read from L2
  return out;
}

}  // namespace kforge::testing
