// The pipeline from graph to plan, in order (Halide's Lower.cpp):
//   decompose (ir/decompose) -> GEMM epilogues (gemm_epilogue) -> partition (stored values, kernel groups,
//   row fusion)
//   -> buffers -> one template per group under its schedule (emit_*.cpp) -> Plan.
#pragma once
#include "codegen/plan.h"
#include "ir/graph.h"

namespace kforge {

struct LowerOptions {
  bool dump_ir = false;  // print the primitive graph and the groups to stderr
};

// `graph` may hold high-level ops; it is decomposed first.
Plan lower(const Graph& graph, const Schedule& schedule, const LowerOptions& opts = {});

// decompose, then fold_gemm_epilogues and fold_conv_epilogues: the graph partition() and the emitters see.
Graph primitive_graph(const Graph& graph);

// The kernel groups `graph` splits into under `fuse_rows` (for search: each group's schedule space).
std::vector<KernelGroup> kernel_groups(const Graph& graph, bool fuse_rows);

// `s` with every kernel group's schedule written out (defaults included): what a measurement records, so
// that a later change of the hand-written defaults cannot relabel it. Throws UserError as schedule_for.
Schedule explicit_schedule(const Graph& graph, const Schedule& s);

}  // namespace kforge
