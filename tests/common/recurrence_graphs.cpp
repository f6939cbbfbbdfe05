#include "common/recurrence_graphs.h"

#include <cmath>

#include "common/graph_json.h"
#include "ir/recurrence.h"

namespace kforge::testing {

nlohmann::json recurrence_graph(const RecurrenceCase& c) {
  const int64_t G = gate_count(cell_from_string(c.cell, "")), T = c.steps, N = c.batch, H = c.hidden;
  nlohmann::json inputs = nlohmann::json::array(), params = nlohmann::json::array();
  nlohmann::json nodes = {node("scale", "const", {}, {{"value", 1.0 / std::sqrt(double(H))}})};
  std::vector<std::string> args;
  for (int dir = 0; dir < c.directions; ++dir) {
    const std::string at = c.directions == 2 ? "_" + std::to_string(dir) : "";
    inputs.push_back(value("x" + at, {T, N, G * H}));
    if (c.initial) inputs.push_back(value("h0" + at, {N, H}));
    if (c.initial && c.cell == "lstm") inputs.push_back(value("c0" + at, {N, H}));
    params.push_back(value("w" + at, {G * H, H}));
    if (c.bias) params.push_back(value("b" + at, {G * H}));
    nodes.push_back(node("ws" + at, "mul", {"w" + at, "scale"}));
    for (const std::string& a : {"x" + at, "ws" + at, c.initial ? "h0" + at : "", c.initial && c.cell == "lstm" ? "c0" + at : "",
                                 c.bias ? "b" + at : ""})
      args.push_back(a);
  }
  nlohmann::json attrs = {{"cell", c.cell}, {"reverse", c.reverse}, {"state", c.both ? "hc" : c.state_c ? "c" : "h"}};
  if (c.directions == 2) attrs["directions"] = 2;
  nodes.push_back(node("y", "recurrence", args, attrs));
  return {{"inputs", inputs}, {"params", params}, {"nodes", nodes}, {"outputs", {"y"}}};
}

std::vector<RecurrenceCase> small_recurrence_cases() {
  return {{"lstm", "lstm"},
          {"lstm_reverse_cell_state", "lstm", 4, 2, 24, true, true},
          {"lstm_zero_states", "lstm", 4, 3, 16, false, false, true, false},
          {"gru_reverse_no_bias", "gru", 6, 3, 40, true, false, false},
          {"gru", "gru", 5, 4, 16},
          {"rnn_tanh", "rnn_tanh", 7, 2, 33},
          {"rnn_relu_no_bias_zero_state", "rnn_relu", 5, 3, 20, false, false, false, false},
          {"gru_bidirectional", "gru", 5, 3, 24, false, false, true, true, 2},
          {"lstm_bidirectional_cell_state_zero_states", "lstm", 4, 2, 16, false, true, true, false, 2},
          {"lstm_both_states_bidirectional", "lstm", 3, 2, 20, false, false, true, true, 2, true}};
}

std::vector<RecurrenceCase> gpu_recurrence_cases() {
  std::vector<RecurrenceCase> out = small_recurrence_cases();
  out.push_back({"lstm_256_zero_states", "lstm", 32, 16, 256, false, false, true, false});
  out.push_back({"lstm_256_reverse_cell_state", "lstm", 16, 16, 256, true, true});
  out.push_back({"gru_batch_600", "gru", 6, 600, 64});  // the hidden state staged 32 columns at a time
  out.push_back({"rnn_tanh_1024", "rnn_tanh", 8, 4, 1024});
  out.push_back({"gru_128_bidirectional", "gru", 24, 32, 128, false, false, true, true, 2});
  out.push_back({"lstm_cell_both_states", "lstm", 1, 64, 512, false, false, true, true, 1, true});
  out.push_back({"lstm_1024", "lstm", 4, 4, 1024});  // 16 units a block hold 262 KB of weights: read from L2
  return out;
}

}  // namespace kforge::testing
