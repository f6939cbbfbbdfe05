#include "search/policy_curves.h"

#include <algorithm>
#include <set>

#include "codegen/lower.h"
#include "ir/error.h"
#include "search/measure.h"
#include "search/proposer.h"

namespace kforge {

namespace {

// The first `count` schedules of `policy` that lower to distinct plans (`policy` changes where it fell back): its opening candidates, then the
// proposer's edits of the default (what `kforge optimize --policy P` would measure, minus the database prior).
std::vector<Schedule> distinct_sequence(const GraphAnalysis& analysis, Policy& policy, OptimizeOptions opts, int count, double copy_gbs) {
  opts.budget = count;
  ScheduleProposer proposer(analysis, opts.seed);
  std::vector<Schedule> queue = opening_candidates(analysis, policy, opts, proposer, copy_gbs);
  std::vector<Schedule> out;
  std::set<std::string> keys;
  size_t next = 0;
  for (int attempts = 0; int(out.size()) < count && attempts < 20 * count; ++attempts) {
    Schedule s;
    if (next < queue.size()) {
      s = queue[next++];
      proposer.mark(s);
    } else if (auto n = proposer.next(Schedule{})) {
      s = *n;
    } else {
      break;
    }
    std::string key;
    try {
      key = plan_key(lower(analysis, s));
    } catch (const UserError&) {
      key = "unlowerable:" + to_json(s).dump();  // measured (and failed) like any other candidate
    }
    if (keys.insert(key).second) out.push_back(s);
  }
  return out;
}

nlohmann::json curve(const std::vector<PlanMeter::Result>& results, size_t from, size_t count) {
  nlohmann::json best = nlohmann::json::array();
  double ms = 0;
  for (size_t i = from; i < from + count; ++i) {
    const EvalResult& r = results[i].eval;
    if (r.relaxed && (ms == 0 || r.native.median_ms < ms)) ms = r.native.median_ms;
    best.push_back(ms > 0 ? nlohmann::json(ms) : nlohmann::json());
  }
  return {{"best_ms", best}, {"candidates", count}};
}

}  // namespace

std::vector<std::pair<std::string, std::vector<Schedule>>> candidate_sequences(const GraphAnalysis& analysis, const CurveOptions& opts,
                                                                              double copy_gbs) {
  std::vector<std::pair<std::string, std::vector<Schedule>>> sequences;
  // random and costmodel alone, without the hand-written openings; `heuristic` is the openings, then random
  // proposals (what `kforge optimize --policy random` measures), and the reference is its longer run.
  OptimizeOptions alone = opts.search, with_openings = opts.search;
  alone.openings = false;
  with_openings.openings = true;
  for (auto& name : opts.policies) {
    Policy p = policy_from_string(name == "heuristic" ? "random" : name);
    // `local` edits the best plan measured so far: its order depends on measurements, not on the policy alone.
    if (p == Policy::local) throw UserError("policy curves compare policies whose proposals need no measurement; not local");
    if (p == Policy::costmodel && opts.search.cost_model.empty()) continue;
    Policy used = p;
    auto seq = distinct_sequence(analysis, used, name == "heuristic" ? with_openings : alone, opts.candidates, copy_gbs);
    if (used != p) throw UserError("policy " + name + " is not available (no checkpoint at " + opts.search.checkpoint + ")");
    sequences.push_back({name, std::move(seq)});
  }
  Policy random = Policy::random;
  sequences.push_back({"reference", distinct_sequence(analysis, random, with_openings, opts.reference, copy_gbs)});
  return sequences;
}

nlohmann::json policy_curves(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
                             const CurveOptions& opts) {
  PlanMeter meter(spec, task, db, compiler, opts.search.versions, opts.compile_threads);
  auto sequences = candidate_sequences(meter.analysis(), opts, meter.copy_gbs());
  std::vector<Schedule> all;
  for (auto& [name, seq] : sequences) all.insert(all.end(), seq.begin(), seq.end());
  auto results = meter.measure(all);
  nlohmann::json out = {{"task", spec.name}, {"eager_ms", spec.eager_ms}, {"compile_ms", spec.compile_ms},
                        {"policies", nlohmann::json::object()}};
  size_t at = 0, distinct = 0;
  for (auto& [name, seq] : sequences) {
    (name == "reference" ? out["reference"] : out["policies"][name]) = curve(results, at, seq.size());
    at += seq.size();
  }
  for (auto& r : results) distinct += !r.repeat;
  out["distinct_plans_measured"] = distinct;
  return out;
}

}  // namespace kforge
