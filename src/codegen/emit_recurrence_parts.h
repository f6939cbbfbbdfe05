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
// `batch` + `n`], its bias at kf_bias[q * UNITS + j] (staged by bias_staging), the unit's cell state at kf_state[e].
std::string cell(const RecurrenceDims& d, const std::string& batch, const std::string& n);
// The block's units' recurrent biases copied once into kf_bias (units from u0): the cell read them from memory
// every step, behind the barriers' memory clobbers that keep a compiler from hoisting them. Empty without a bias.
std::string bias_staging(const RecurrenceDims& d, int block);

// The dot products of a step in tiles (RecurrenceTile: vec 1 and the batch-split kernel), for a block of `block`
// threads whose gates hold `batch` (a constant's name) batch rows:
// - tile_constants: TR, TB, BT, TILES and the thread's split `sp`;
// - tile_products: each of the thread's tiles (weight rows r0 + a, batch rows b0 + b * BT) adds its columns k (from
//   `sp` below `columns`, SPLITS apart) into acc[i][a][b] (declared by the caller: float acc[per_thread][TR][TB]),
//   reading `weight` (of r0, a, k) and the batch row's staged state at `state`[row * stage_stride + k];
// - tile_sums: the tiles' splits added by warp shuffles into kf_gates, then a barrier.
std::string tile_constants(const RecurrenceTile& t, const std::string& batch);
int64_t tiles_a_thread(const RecurrenceTile& t, int block);
std::string tile_products(const RecurrenceTile& t, int block, const std::string& weight, const std::string& state,
                          const std::string& columns, const std::string& indent);
std::string tile_sums(const RecurrenceTile& t, int block, const std::string& batch);

}  // namespace kforge::recurrence_parts
