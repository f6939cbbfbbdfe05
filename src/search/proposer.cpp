#include "search/proposer.h"

#include <algorithm>
#include <map>

#include "codegen/lower.h"
#include "codegen/recurrence_unrolling.h"
#include "search/starved_schedules.h"

namespace kforge {

ScheduleProposer::ScheduleProposer(const GraphAnalysis& analysis, uint64_t seed, bool skip_starved)
    : rng_(seed), skip_starved_(skip_starved), channels_last_(analysis.has_channels_last_form()),
      unrolled_(analysis.has_unrolled_form() && unrolled_form_worth_measuring(analysis.groups(true))) {
  for (bool steps : {false, true})
    for (int layout : {0, 1, 2}) {
      if ((steps && !unrolled_) || (layout > 0 && !channels_last_)) continue;
      for (bool fuse : {false, true}) {
        Form& f = forms_[steps][layout][fuse];
        f.groups = analysis.groups(fuse, layout > 0, steps, layout == 2);
        for (auto& g : f.groups) f.spaces.push_back(space_of(g));
      }
    }
}

void ScheduleProposer::keep_legal(Schedule& s) const {
  std::map<std::string, const KernelGroup*> kept;
  for (const KernelGroup& g : form_of(s).groups) kept[g.key] = &g;
  std::erase_if(s.kernels, [&](const auto& entry) {
    auto g = kept.find(entry.first);
    return g == kept.end() || !is_legal(*g->second, entry.second);
  });
}

std::vector<KernelSchedule> ScheduleProposer::space_of(const KernelGroup& g) const {
  std::vector<KernelSchedule> space = schedule_space(g), fed;
  if (!skip_starved_) return space;
  for (auto& ks : space)
    if (!starves_memory(g, ks)) fed.push_back(ks);
  return fed.empty() ? space : fed;
}

bool ScheduleProposer::mark(const Schedule& s) { return tried_.insert(to_json(s).dump()).second; }

size_t ScheduleProposer::space_size() const {
  size_t total = 0;
  for (const auto& unrolled : forms_)
    for (const auto& forms : unrolled)
      for (const Form& f : forms) {
        if (f.groups.empty()) continue;
        size_t n = 1;
        for (auto& g : f.groups) n = std::min<size_t>(n * schedule_space(g).size(), size_t(1) << 40);
        total += n;
      }
  return total;
}

std::optional<Schedule> ScheduleProposer::next(const Schedule& best) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    Schedule s = best;
    // Mostly edit one kernel; sometimes flip fusion, the channels-last form or the recurrences' form (which change
    // the groups) or take several steps. The channels-last form keeps the kernels' schedules where they stay legal: its groups' keys
    // are the same nodes' (a convolution's layout is nhwc there).
    if (std::uniform_int_distribution<int>(0, 9)(rng_) == 0) {
      s.fuse_rows = !s.fuse_rows;
      s.kernels.clear();
    } else if (channels_last_ && std::uniform_int_distribution<int>(0, 9)(rng_) == 0) {
      // Another layout form: channels last on or off, or (in it) its convolutions in fp16 or not. The schedules of
      // the groups it keeps stay where still legal (its convolutions' layout is nhwc; fp16 ones fix their precision).
      if (s.channels_last && std::uniform_int_distribution<int>(0, 1)(rng_) == 0) s.half_activations = !s.half_activations;
      else s.channels_last = !s.channels_last;
      s.half_activations = s.half_activations && s.channels_last;
      for (const KernelGroup& g : form_of(s).groups)
        if (auto it = s.kernels.find(g.key); it != s.kernels.end() && g.channels_last) it->second.layout = Layout::nhwc;
      keep_legal(s);
    } else if (unrolled_ && std::uniform_int_distribution<int>(0, 9)(rng_) == 0) {
      // The other form of the recurrences: the schedules of groups it keeps stay, where still legal (the unrolled
      // layer's last node keeps the recurrence's key, now a group of another kind).
      s.unroll_recurrences = !s.unroll_recurrences;
      keep_legal(s);
    }
    const auto& groups = form_of(s).groups;
    const auto& spaces = form_of(s).spaces;
    if (groups.empty()) return std::nullopt;
    int steps = 1 + std::uniform_int_distribution<int>(0, 3)(rng_) / 3;
    for (int k = 0; k < steps; ++k) {
      size_t gi = std::uniform_int_distribution<size_t>(0, groups.size() - 1)(rng_);
      const KernelGroup& g = groups[gi];
      const auto& space = spaces[gi];
      if (space.empty()) continue;
      s.kernels[g.key] = space[std::uniform_int_distribution<size_t>(0, space.size() - 1)(rng_)];
    }
    if (std::uniform_int_distribution<int>(0, 7)(rng_) == 0) s.cuda_graph = !s.cuda_graph;
    if (mark(s)) return s;
  }
  return std::nullopt;
}

void ScheduleProposer::note_offered(const std::string& group, const CallForm& form, int offered, int requested, int used) {
  ListLength& l = lists_[{group, form}];
  l.offered = std::max(l.offered, offered);
  if (used < requested) l.usable = std::min(l.usable, used + 1);
}

std::optional<Schedule> ScheduleProposer::next_algorithm(const Schedule& best) {
  const auto& groups = form_of(best).groups;
  // Products first: a cuBLASLt algorithm costs one call to try, a cuDNN engine may build for seconds at load.
  for (GroupKind kind : {GroupKind::matmul, GroupKind::conv}) {
    const int most = kind == GroupKind::matmul ? kMatmulAlgos : kConvEngines;
    for (int algo = 0; algo < most; ++algo)
      for (const KernelGroup& g : groups) {
        KernelSchedule ks = schedule_for(best, g);
        if (g.kind != kind || ks.strategy != Strategy::library) continue;
        // Past what the library offered (or what the step could use of it), an index is its last usable one
        // (cuBLASLt and kforge's cuDNN step clamp it): that call, not a new one.
        const bool conv = kind == GroupKind::conv;
        auto o = lists_.find({g.key, {ks.precision, conv ? to_string(ks.layout) : "", conv && ks.library_epilogue}});
        const int listed = o == lists_.end() ? most : std::min(o->second.offered, o->second.usable);
        if (algo >= listed || std::min(ks.algo, listed - 1) == algo) continue;
        ks.algo = algo;
        Schedule s = best;
        s.kernels[g.key] = ks;
        if (is_legal(g, ks) && mark(s)) return s;
      }
  }
  return std::nullopt;
}

}  // namespace kforge
