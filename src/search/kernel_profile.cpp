#include "search/kernel_profile.h"

#include <map>
#include <set>

#include "ir/error.h"
#include "search/features.h"

namespace kforge {

namespace {

// The workspace a library step binds (emit_matmul.cpp: its last argument; emit_conv.cpp: its fourth): scratch
// the library may leave untouched, not traffic of the op.
int workspace_arg(const PlanKernel& k) {
  if (k.kind == StepKind::cublaslt) return int(k.args.size()) - 1;
  if (k.kind == StepKind::cudnn) return 3;
  return -1;
}

}  // namespace

nlohmann::json kernel_profile(const GraphAnalysis& analysis, const Plan& plan, const std::vector<Stats>& step_times) {
  if (!step_times.empty() && step_times.size() != plan.kernels.size())
    throw UserError("kernel profile: " + std::to_string(step_times.size()) + " step times for a plan of " +
                    std::to_string(plan.kernels.size()) + " steps");
  const Graph& prim = analysis.primitive(plan.schedule);
  std::map<std::string, const KernelGroup*> group_of;
  for (const KernelGroup& g : analysis.groups(plan.schedule)) group_of[g.key] = &g;
  nlohmann::json out = nlohmann::json::array();
  std::map<std::string, size_t> row_of;           // group key -> its row in `out`
  std::map<std::string, std::set<int>> buffers;   // group key -> buffers its steps bind
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const PlanKernel& k = plan.kernels[i];
    if (!row_of.count(k.group)) {
      row_of[k.group] = out.size();
      auto g = group_of.find(k.group);
      out.push_back({{"group", k.group}, {"op", g == group_of.end() ? "?" : to_string(g->second->kind)},
                     {"steps", nlohmann::json::array()}, {"ms", 0.0},
                     {"flops", g == group_of.end() ? 0.0 : group_flops(prim, *g->second)}});
    }
    nlohmann::json& row = out[row_of[k.group]];
    const double ms = step_times.empty() ? 0.0 : step_times[i].median_ms;
    row["steps"].push_back({{"name", k.name}, {"kind", to_string(k.kind)}, {"ms", ms}});
    row["ms"] = row["ms"].get<double>() + ms;
    for (size_t a = 0; a < k.args.size(); ++a)
      if (int(a) != workspace_arg(k)) buffers[k.group].insert(k.args[a]);
  }
  for (auto& row : out) {
    int64_t bytes = 0;
    for (int b : buffers[row["group"].get<std::string>()]) bytes += plan.buffers.at(size_t(b)).bytes();
    row["bytes"] = bytes;
  }
  return out;
}

}  // namespace kforge
