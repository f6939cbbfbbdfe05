// Schedules as data: names, JSON, and the schedule a kernel group gets.
#include "codegen/schedule.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include "ir/error.h"
#include "ir/types.h"

namespace kforge {


std::string to_string(Strategy s) {
  switch (s) {
    case Strategy::flat: return "flat";
    case Strategy::thread: return "thread";
    case Strategy::warp: return "warp";
    case Strategy::block: return "block";
    case Strategy::split: return "split";
    case Strategy::tile: return "tile";
    case Strategy::library: return "library";
    case Strategy::mma: return "mma";
  }
  return "?";
}

std::string to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::tf32x3: return "tf32x3";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp16x3: return "fp16x3";
  }
  return "?";
}

Precision precision_from_string(const std::string& s) {
  for (auto p : {Precision::fp32, Precision::tf32, Precision::tf32x3, Precision::fp16, Precision::bf16, Precision::fp16x3})
    if (to_string(p) == s) return p;
  throw UserError("unknown precision '" + s + "' (fp32, tf32, tf32x3, fp16, bf16 or fp16x3)");
}


std::string to_string(Layout l) { return l == Layout::nhwc ? "nhwc" : "nchw"; }

Layout layout_from_string(const std::string& s) {
  for (auto l : {Layout::nchw, Layout::nhwc})
    if (to_string(l) == s) return l;
  throw UserError("unknown layout '" + s + "' (nchw or nhwc)");
}

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> all = {Strategy::flat, Strategy::thread, Strategy::warp,
                                            Strategy::block, Strategy::split, Strategy::tile, Strategy::library,
                                            Strategy::mma};
  return all;
}

Strategy strategy_from_string(const std::string& s) {
  for (auto st : all_strategies())
    if (to_string(st) == s) return st;
  throw UserError("unknown strategy '" + s + "' (flat, thread, warp, block, split, tile, library or mma)");
}

std::string to_string(RowCache c) {
  switch (c) {
    case RowCache::none: return "none";
    case RowCache::shared: return "shared";
    case RowCache::registers: return "registers";
    case RowCache::bulk: return "bulk";
  }
  return "?";
}

// Schedules recorded before registers joined read true/false.
RowCache row_cache_from_json(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? RowCache::shared : RowCache::none;
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  for (auto c : {RowCache::none, RowCache::shared, RowCache::registers, RowCache::bulk})
    if (to_string(c) == s) return c;
  throw UserError("unknown cache_row '" + s + "' (none, shared, registers or bulk)");
}

nlohmann::json to_json(const KernelSchedule& ks) {
  nlohmann::json j = {{"strategy", to_string(ks.strategy)}, {"block", ks.block}, {"vec", ks.vec},
                      {"items", ks.items}, {"chunks", ks.chunks}, {"cache_row", to_string(ks.cache_row)}};
  // Only library kernels have these: every other schedule's JSON keeps its fields. cache_row was a boolean
  // until `registers` joined; the database's older rows still read back (row_cache_from_json).
  if (ks.strategy == Strategy::library || ks.strategy == Strategy::mma)
    j.update({{"precision", to_string(ks.precision)}, {"algo", ks.algo}});
  if (ks.layout != Layout::nchw) j["layout"] = to_string(ks.layout);  // absent: nchw (older rows read back)
  if (ks.library_epilogue) j["epilogue"] = "library";                   // absent: the kernel writing the result's
  return j;
}

nlohmann::json to_json(const Schedule& s) {
  nlohmann::json k = nlohmann::json::object();
  for (auto& [key, ks] : s.kernels) k[key] = to_json(ks);
  nlohmann::json j = {{"fuse_rows", s.fuse_rows}, {"cuda_graph", s.cuda_graph}, {"kernels", k}};
  if (s.channels_last) j["channels_last"] = true;  // absent: false (rows recorded before the form read back)
  if (s.half_activations) j["half_activations"] = true;
  if (s.unroll_recurrences) j["unroll_recurrences"] = true;
  return j;
}

Schedule schedule_from_json(const nlohmann::json& j) {
  Schedule s;
  s.fuse_rows = j.value("fuse_rows", true);
  s.cuda_graph = j.value("cuda_graph", true);
  s.channels_last = j.value("channels_last", false);
  s.half_activations = j.value("half_activations", false);
  s.unroll_recurrences = j.value("unroll_recurrences", false);
  const nlohmann::json kernels = j.value("kernels", nlohmann::json::object());  // kept alive for items()
  for (auto& [key, v] : kernels.items()) {
    KernelSchedule ks;
    ks.strategy = strategy_from_string(v.value("strategy", "flat"));
    ks.block = v.value("block", 256);
    ks.vec = v.value("vec", 1);
    ks.items = v.value("items", 1);
    ks.chunks = v.value("chunks", 1);
    ks.cache_row = row_cache_from_json(v.value("cache_row", nlohmann::json(false)));
    ks.precision = precision_from_string(v.value("precision", "fp32"));
    ks.algo = v.value("algo", 0);
    ks.layout = layout_from_string(v.value("layout", "nchw"));
    const std::string epilogue = v.value("epilogue", "kernel");
    if (epilogue != "kernel" && epilogue != "library") throw UserError("schedule of kernel '" + key + "': epilogue must be kernel or library");
    ks.library_epilogue = epilogue == "library";
    s.kernels[key] = ks;
  }
  return s;
}

KernelSchedule schedule_for(const Schedule& s, const KernelGroup& g) {
  auto it = s.kernels.find(g.key);
  KernelSchedule ks = it == s.kernels.end() ? default_schedule(g) : it->second;
  check_schedule(g, ks);
  return ks;
}

}  // namespace kforge
