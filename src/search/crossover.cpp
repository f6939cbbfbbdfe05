#include "search/crossover.h"

#include <algorithm>
#include <optional>
#include <set>

namespace kforge {

namespace {
bool is_call(GroupKind k) { return k == GroupKind::matmul || k == GroupKind::conv; }

// `s` less its products' and convolutions' kernel schedules.
Schedule rest_of(const GraphAnalysis& analysis, Schedule s) {
  for (const KernelGroup& g : analysis.groups(s))
    if (is_call(g.kind)) s.kernels.erase(g.key);
  return s;
}

// `rest` with `donor`'s product and convolution schedules, where rest's fusion keeps the group (its key), a
// convolution's in nhwc where rest is the channels-last form; none where one is illegal there.
std::optional<Schedule> with_calls_of(const GraphAnalysis& analysis, const Schedule& donor, Schedule rest) {
  for (const KernelGroup& g : analysis.groups(rest)) {
    auto it = donor.kernels.find(g.key);
    if (!is_call(g.kind) || it == donor.kernels.end()) continue;
    KernelSchedule call = it->second;
    if (g.channels_last) call.layout = Layout::nhwc;  // the same call on the channels-last form's tensors
    if (!is_legal(g, call)) return std::nullopt;
    rest.kernels[g.key] = call;
  }
  return rest;
}
}  // namespace

std::vector<Schedule> crossovers(const GraphAnalysis& analysis, const std::vector<Schedule>& donors,
                                 const std::vector<MeasuredSchedule>& measured, int rests) {
  std::vector<const MeasuredSchedule*> fastest;
  for (const MeasuredSchedule& m : measured) fastest.push_back(&m);
  std::stable_sort(fastest.begin(), fastest.end(), [](auto* a, auto* b) { return a->ms < b->ms; });
  std::vector<Schedule> ranked;  // distinct rests, by their fastest plan
  std::set<std::string> seen;
  for (const MeasuredSchedule* m : fastest) {
    Schedule r = rest_of(analysis, m->schedule);
    if (seen.insert(to_json(r).dump()).second) ranked.push_back(r);
  }
  std::vector<Schedule> out;
  for (const Schedule& donor : donors) {
    const Schedule own = rest_of(analysis, donor);
    int taken = 0;
    for (const Schedule& r : ranked) {
      if (taken == rests) break;
      if (r == own) continue;
      auto child = with_calls_of(analysis, donor, r);
      if (child && std::find(out.begin(), out.end(), *child) == out.end()) out.push_back(*child), ++taken;
    }
  }
  return out;
}

}  // namespace kforge
