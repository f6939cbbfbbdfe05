// Graphs of one recurrence node (ir/recurrence.h) for the codegen and GPU tests: the gates' input share, the
// initial states and the recurrent weights as the graph's own values, the weights scaled by 1/sqrt(H) (as
// PyTorch initialises them) so that the gates stay off their saturated ends and an error in any dot product shows.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge::testing {

struct RecurrenceCase {
  std::string name;
  std::string cell;  // lstm, gru, rnn_tanh, rnn_relu
  int64_t steps = 5, batch = 3, hidden = 40;
  bool reverse = false;
  bool state_c = false;  // the result is the LSTM's cell state
  bool bias = true;
  bool initial = true;  // h0 (and c0) given; else zeros
  int directions = 1;   // 2: a bidirectional layer's two directions in one node (operands suffixed _0, _1)
  bool both = false;    // the result holds h and c (an LSTM cell's two results)
};

nlohmann::json recurrence_graph(const RecurrenceCase& c);
// Small cases, every cell and option: one block holds every unit (the CPU runner's limit).
std::vector<RecurrenceCase> small_recurrence_cases();
// Cases at a GPU's sizes too: units over many blocks, the hidden state staged in pieces (large batches), weights
// too large for shared memory.
std::vector<RecurrenceCase> gpu_recurrence_cases();

}  // namespace kforge::testing
