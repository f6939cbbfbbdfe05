#include "common/representative_schedules.h"

#include <set>

#include "codegen/lower.h"

namespace kforge::testing {

std::vector<Schedule> representative_schedules(const Graph& g, bool vary_items) {
  std::vector<Schedule> out = {Schedule{}};
  Schedule unfused;
  unfused.fuse_rows = false;
  out.push_back(unfused);
  for (auto& grp : kernel_groups(g, true)) {
    std::set<std::string> seen;
    int last_algo = (grp.kind == GroupKind::conv ? kConvEngines : kMatmulAlgos) - 1;  // first and last engines
    for (auto& ks : schedule_space(grp)) {
      // kforge's direct convolution: every tile shape (its rows per thread and block size change the indexing).
      const bool every_tile = grp.kind == GroupKind::conv && ks.strategy == Strategy::tile;
      std::string key = to_string(ks.strategy) + std::to_string(ks.vec) + to_string(ks.cache_row) +
                        (vary_items || every_tile ? std::to_string(ks.items) : "") +
                        (every_tile ? std::to_string(ks.block) : "") + to_string(ks.precision) + to_string(ks.layout) +
                        (cluster_blocks(ks) > 1 ? "c" + std::to_string(ks.chunks) : "") +  // clusters
                        (ks.strategy == Strategy::library && ks.chunks > 1 ? "k" + std::to_string(ks.chunks) : "") +  // pieces
                        (ks.algo == 0 || ks.algo == last_algo ? std::to_string(ks.algo) : "") +
                        (ks.library_epilogue ? "e" : "");
      if (!seen.insert(key).second) continue;
      Schedule s;
      s.kernels[grp.key] = ks;
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace kforge::testing
