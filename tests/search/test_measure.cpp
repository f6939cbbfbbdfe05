// Parallel NVRTC compiles before a batch is timed (search/measure.h); NVRTC needs no GPU.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/scratch_path.h"
#include "codegen/lower.h"
#include "common/sample_graphs.h"
#include "runtime/compiler.h"
#include "search/decisions.h"
#include "search/measure.h"

namespace kforge {
namespace {

TEST(Measure, PrecompileFillsTheCacheFromSeveralThreads) {
  std::string cache = testing::scratch_path("kforge-precompile-cache");
  std::filesystem::remove_all(cache);
  Compiler compiler({"sm_90", cache, {}});
  std::vector<Plan> plans;
  for (auto name : {"softmax", "relu", "cumsum_last"}) {
    Graph g = graph_from_json(testing::sample_graph(name));
    plans.push_back(lower(g, Schedule{}));
    plans.push_back(lower(g, schedule_from_choices(g, {3, 1})));
  }
  plans.push_back(plans.front());  // a repeated plan is compiled once
  precompile(plans, compiler, 3);
  std::set<std::string> keys;
  for (auto& p : plans) {
    keys.insert(plan_key(p));
    for (auto& k : p.kernels) {
      CompileResult r = compiler.compile(k.source, k.name);
      EXPECT_TRUE(r.ok) << k.name << ": " << r.log;
      EXPECT_TRUE(r.cache_hit) << k.name << " was not compiled ahead";
    }
  }
  EXPECT_EQ(keys.size(), plans.size() - 1);
}

}  // namespace
}  // namespace kforge
