// The pipeline from graph to plan, in order (Halide's Lower.cpp):
//   decompose (ir/decompose) -> GEMM epilogues (gemm_epilogue) -> partition (stored values, kernel groups,
//   row fusion)
//   -> buffers -> one template per group under its schedule (emit_*.cpp) -> Plan.
// A search lowers every schedule from one GraphAnalysis (codegen/analysis.h) built once per graph.
#pragma once
#include "codegen/analysis.h"
#include "codegen/plan.h"
#include "ir/graph.h"

namespace kforge {

struct LowerOptions {
  bool dump_ir = false;  // print the primitive graph and the groups to stderr
};

// The graph may hold high-level ops: the analysis decomposed them.
Plan lower(const GraphAnalysis& analysis, const Schedule& schedule, const LowerOptions& opts = {});

// decompose, then fold_gemm_epilogues and fold_conv_epilogues: the graph partition() and the emitters see; a
// recurrence no persistent kernel holds on `target` unrolled first (every recurrence with `unroll_recurrences`:
// codegen/recurrence_unrolling.h), attention fused where its kernel holds the head dims (codegen/attention_fusion.h).
Graph primitive_graph(const Graph& graph, const TargetFacts& target = {}, bool unroll_recurrences = false);

// A copy of the kernel groups under `fuse_rows` (each group's schedule space), for one-off callers that hold no
// analysis of their own.
std::vector<KernelGroup> kernel_groups(const GraphAnalysis& analysis, bool fuse_rows);

// `s` with every kernel group's schedule written out (defaults included): what a measurement records, so
// that a later change of the hand-written defaults cannot relabel it. Throws UserError as schedule_for.
Schedule explicit_schedule(const GraphAnalysis& analysis, const Schedule& s);

}  // namespace kforge
