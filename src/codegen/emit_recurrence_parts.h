// The pieces both recurrence kernels share (emit_recurrence.cpp: the unit-split persistent kernel;
// emit_recurrence_cluster.cpp: the batch-split kernel): the layer's operands and the cell's equations.
#pragma once
#include <string>
#include <vector>

#include "codegen/emitters.h"

namespace kforge::recurrence_parts {

// Each direction's operands (parameters x_0, w_0, h0_0, ... and x_1, ... for a second direction), then the result
// `y`; `pick` declares x, w, h0, c0, bias as the block's direction's (a local `dir` chooses).
struct Operands {
  std::vector<int> args;
  std::string params, pick;
};
Operands operands(EmitContext& cx, const KernelGroup& g);

// Statements computing the new state `hn` (and an LSTM's `cn`) of unit u (locals e, j, u and the batch row index
// `n`): gate q's input part at xs[q * UNITS * `batch` + e], its recurrent part at kf_gates[(q * UNITS + j) *
// `batch` + `n`] (its bias added here), the unit's cell state at kf_state[e].
std::string cell(const RecurrenceDims& d, const std::string& batch, const std::string& n);

}  // namespace kforge::recurrence_parts
