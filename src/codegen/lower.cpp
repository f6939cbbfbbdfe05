#include "codegen/lower.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "codegen/conv_epilogue.h"
#include "codegen/emitters.h"
#include "codegen/gemm_epilogue.h"
#include "codegen/half_results.h"
#include "codegen/half_views.h"
#include "codegen/attention_fusion.h"
#include "codegen/recurrence_unrolling.h"
#include "codegen/reshape_sinking.h"
#include "codegen/slice_hoisting.h"
#include "ir/decompose.h"
#include "ir/error.h"
#include "ir/hash.h"

namespace kforge {

namespace {

// One device buffer per stored value that owns memory; roles from the graph's interface.
std::vector<PlanBuffer> assign_buffers(const Graph& g, const Partition& p, std::map<int, int>& buffer_of_owner) {
  std::vector<PlanBuffer> bufs;
  auto index_in = [](const std::vector<int>& v, int id) {
    auto it = std::find(v.begin(), v.end(), id);
    return it == v.end() ? -1 : int(it - v.begin());
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!p.stored[i] || p.storage[i] != int(i)) continue;
    const Node& n = g.nodes[i];
    PlanBuffer b{BufferRole::temp, -1, n.name, n.type.dtype, n.type.shape};
    if (int k = index_in(g.inputs, int(i)); k >= 0) b.role = BufferRole::input, b.index = k;
    if (int k = index_in(g.params, int(i)); k >= 0) b.role = BufferRole::param, b.index = k;
    buffer_of_owner[int(i)] = int(bufs.size());
    bufs.push_back(b);
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    int owner = p.storage[g.outputs[k]];
    PlanBuffer& b = bufs.at(buffer_of_owner.at(owner));
    if (b.role == BufferRole::output)
      throw UserError("graph outputs " + std::to_string(b.index) + " and " + std::to_string(k) +
                      " share memory ('" + g.at(g.outputs[k]).name + "'); kforge needs distinct outputs");
    b.role = BufferRole::output;
    b.index = int(k);
    b.name = g.at(g.outputs[k]).name;
    b.shape = g.at(g.outputs[k]).type.shape;
  }
  return bufs;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out.substr(0, 40);
}

}  // namespace

Graph primitive_graph(const Graph& graph, const TargetFacts& target, bool unroll_recurrences) {
  const Graph prim = decompose(graph);
  const Graph decomposed = fuse_attention(
      unroll_recurrences ? unroll_every_recurrence(prim) : unroll_recurrences_that_do_not_fit(prim, target), target);
  const Graph folded = fold_conv_epilogues(fold_gemm_epilogues(sink_reshapes(views_before_half_casts(decomposed))));
  return views_before_half_casts(half_results(slices_before_elementwise(folded)));  // the views of 16-bit results too
}

std::vector<KernelGroup> kernel_groups(const GraphAnalysis& analysis, bool fuse_rows) { return analysis.groups(fuse_rows); }

Schedule explicit_schedule(const GraphAnalysis& analysis, const Schedule& s) {
  Schedule out = s;
  out.kernels.clear();
  for (const KernelGroup& g : analysis.groups(s)) out.kernels[g.key] = schedule_for(s, g);
  return out;
}

Plan lower(const GraphAnalysis& analysis, const Schedule& schedule, const LowerOptions& opts) {
  const Graph& prim = analysis.primitive(schedule);
  const Partition& part = analysis.partition(schedule);
  if (opts.dump_ir) std::cerr << graph_to_json(prim).dump(1) << "\n";
  Plan plan;
  plan.schedule = schedule;
  plan.graph_hash = analysis.graph_hash();
  std::map<int, int> buffer_of_owner;
  plan.buffers = assign_buffers(prim, part, buffer_of_owner);
  EmitContext cx{part, buffer_of_owner, plan.buffers};
  for (size_t i = 0; i < part.groups.size(); ++i) {
    const KernelGroup& g = part.groups[i];
    KernelSchedule ks = schedule_for(schedule, g);
    std::string name = "kf" + std::to_string(i) + "_" + sanitize(g.key);
    std::vector<PlanKernel> ks_out;
    switch (g.kind) {
      case GroupKind::pointwise: ks_out = emit_pointwise(cx, g, ks, name); break;
      case GroupKind::row: ks_out = emit_row(cx, g, ks, name); break;
      case GroupKind::scan: ks_out = emit_scan(cx, g, ks, name); break;
      case GroupKind::pool: ks_out = emit_pool(cx, g, ks, name); break;
      case GroupKind::matmul: ks_out = emit_matmul(cx, g, ks, name); break;
      case GroupKind::conv: ks_out = emit_conv(cx, g, ks, name); break;
      case GroupKind::recurrence: ks_out = emit_recurrence(cx, g, ks, name); break;
      case GroupKind::attention: ks_out = emit_attention(cx, g, ks, name); break;
    }
    if (opts.dump_ir) std::cerr << "group " << g.key << ": " << ks_out.size() << " kernel(s)\n";
    for (auto& k : ks_out) plan.kernels.push_back(std::move(k));
  }
  return plan;
}

}  // namespace kforge
