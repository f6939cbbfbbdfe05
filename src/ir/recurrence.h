// A recurrent layer's time loop as one op: `recurrence [x, w_hh, h0, c0, b_hh]`, one layer in one direction of
// torch.nn.RNN / LSTM / GRU (PyTorch's equations, gates stacked in PyTorch's order: i, f, g, o and r, z, n).
//
//   x     [T, N, G*H]  the input's share of every gate at every step, its bias included (x W_ih^T + b_ih: one
//                      product of the whole sequence, computed before the loop)
//   w_hh  [G*H, H]     the recurrent weights
//   h0    [N, H]       the initial hidden state (-1: zeros, as PyTorch's default)
//   c0    [N, H]       the initial cell state (lstm only; -1: zeros)
//   b_hh  [G*H]        the recurrent bias (-1 for none): inside r * (W_hn h + b_hn) for a GRU, so not foldable
//                      into x
// attrs: cell ("lstm", "gru", "rnn_tanh", "rnn_relu"), reverse (walk t = T-1 .. 0), state ("h": the result is
// every step's hidden state; "c": every step's cell state, an LSTM's c_n being its last; "hc": both, h first, an
// LSTM cell's two results from one loop), directions (1, or 2: a
// bidirectional layer's two directions side by side, five more args [x, w_hh, h0, c0, b_hh] for the one walking
// backward; `reverse` false).
// Result [T, N, D*S*H], f32 (S: the states kept, 1 or 2): direction d's in columns [d*S*H, (d+1)*S*H), PyTorch's
// layout of a bidirectional layer's output. G is 4 (lstm), 3 (gru) or 1 (rnn). Why one op and not the steps unrolled: a step is
// a small product and a few elementwise ops, so the unrolled graph launches two kernels a step and reads the
// weights from memory every step; as one op the whole loop is one persistent kernel that keeps the weights on
// chip (codegen/emit_recurrence.cpp).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kforge {

struct HostTensor;

enum class Cell { lstm, gru, rnn_tanh, rnn_relu };

struct RecurrenceDims {
  Cell cell = Cell::lstm;
  int gates = 4;  // G
  int64_t steps = 0, batch = 0, hidden = 0;  // T, N, H
  bool reverse = false;
  bool keeps_h = true, keeps_c = false;  // the states the result holds (c: an LSTM's only)
  bool bias = false;     // b_hh given
  bool h0 = false, c0 = false;  // initial states given (else zeros)
  int directions = 1;           // D; with 2, direction 1 walks backward
  // Whether direction `dir` walks t = T-1 .. 0.
  bool backward(int dir) const { return dir == 1 || reverse; }
  int64_t states() const { return int64_t(keeps_h) + int64_t(keeps_c); }
  int64_t width() const { return directions * states() * hidden; }  // the result's last dim
};

// Argument positions within a direction's five; direction d's start at d * kRecArgs.
constexpr size_t kRecX = 0, kRecW = 1, kRecH0 = 2, kRecC0 = 3, kRecBias = 4, kRecArgs = 5;

// The node's geometry, its arguments' shapes and dtypes checked (UserError naming the node and the argument).
RecurrenceDims recurrence_dims(const Graph& g, const Node& n);
Cell cell_from_string(const std::string& s, const std::string& where);
std::string to_string(Cell c);
int gate_count(Cell c);

// The CPU reference (ir/interpreter.h), in double: args as the node's, absent ones nullptr.
HostTensor run_recurrence(const Node& n, const RecurrenceDims& d, const std::vector<const HostTensor*>& args);

}  // namespace kforge
