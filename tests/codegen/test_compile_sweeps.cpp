// Every sample's kernels compiled by NVRTC, for Hopper under representative schedules and for Ampere and Ada
// under their own schedule spaces: a minute of compiling on two cores, so labelled `slow` (CI runs it; the
// README's test command with KFORGE_SLOW_TESTS=1). The checks of what the kernels say are in test_codegen.cpp.
#include <gtest/gtest.h>

#include <set>

#include "codegen/analysis.h"
#include "codegen/lower.h"
#include "codegen/schedule.h"
#include "common/representative_schedules.h"
#include "common/sample_graphs.h"
#include "runtime/compiler.h"

namespace kforge {
namespace {

TEST(Codegen, EveryKernelOfEverySampleCompilesForSm90) {
  Compiler c({"sm_90", "", {}});
  std::set<std::string> compiled;
  int kernels = 0;
  for (auto& sample : testing::sample_graphs()) {
    Graph g = graph_from_json(sample.graph);
    for (auto& s : testing::representative_schedules(g, false)) {
      Plan p = lower(g, s);
      ASSERT_FALSE(p.kernels.empty()) << sample.name;
      for (auto& k : p.kernels) {
        if (!compiled.insert(k.source).second) continue;
        CompileResult r = c.compile(k.source, k.name);
        ASSERT_TRUE(r.ok) << sample.name << " schedule " << to_json(s).dump() << "\n" << r.log << "\n" << k.source;
        ++kernels;
      }
    }
  }
  EXPECT_GT(kernels, 150);
}

// Ampere (sm_80, sm_86) and Ada (sm_89) too: NVRTC needs no GPU, so CI compiles for the architectures kforge
// supports beside the Hopper its rules were measured on. The default plans, fused and not, must build everywhere.
TEST(Codegen, DefaultPlansCompileForAmpereAndAda) {
  for (const char* arch : {"sm_80", "sm_86", "sm_89"}) {
    Compiler c({arch, "", {}});
    std::set<std::string> compiled;
    for (auto& sample : testing::sample_graphs()) {
      Graph g = graph_from_json(sample.graph);
      for (bool fuse : {true, false}) {
        Schedule s;
        s.fuse_rows = fuse;
        for (auto& k : lower(g, s).kernels) {
          if (k.kind != StepKind::nvrtc || !compiled.insert(k.source).second) continue;
          CompileResult r = c.compile(k.source, k.name);
          ASSERT_TRUE(r.ok) << arch << " " << sample.name << "\n" << r.log;
        }
      }
    }
    EXPECT_GT(compiled.size(), 40u) << arch;
  }
}

// Below sm_90 the schedule spaces leave out Hopper's bulk row copies and thread-block clusters, and every schedule
// left compiles for Ampere: a search on an A100 cannot spend its budget on kernels its GPU cannot build.
TEST(Codegen, SchedulesBelowHopperLeaveOutBulkCopiesAndClustersAndCompile) {
  Compiler c({"sm_80", "", {}});
  std::set<std::string> compiled;
  int hopper_only = 0;
  for (auto& sample : testing::sample_graphs()) {
    Graph g = graph_from_json(sample.graph);
    GraphAnalysis hopper(g), ampere(g, {.sm = 80, .sms = 108});
    for (bool fuse : {true, false})
      for (size_t i = 0; i < ampere.groups(fuse).size(); ++i) {
        const KernelGroup& a = ampere.groups(fuse)[i];
        for (const KernelSchedule& ks : schedule_space(hopper.groups(fuse)[i]))
          hopper_only += (ks.cache_row == RowCache::bulk || (ks.chunks > 1 && ks.strategy != Strategy::split &&
                                                             ks.strategy != Strategy::library)) && !is_legal(a, ks);
        int tried = 0;
        for (const KernelSchedule& ks : schedule_space(a)) {
          ASSERT_FALSE(ks.cache_row == RowCache::bulk) << sample.name;
          if (tried++ % 13) continue;  // a spread of each space: compiling all of them takes minutes
          Schedule s;
          s.fuse_rows = fuse;
          s.kernels[a.key] = ks;
          for (auto& k : lower(ampere, s).kernels) {
            if (k.kind != StepKind::nvrtc || !compiled.insert(k.source).second) continue;
            CompileResult r = c.compile(k.source, k.name);
            ASSERT_TRUE(r.ok) << sample.name << " " << to_json(ks).dump() << "\n" << r.log;
          }
        }
      }
  }
  EXPECT_GT(hopper_only, 20);
  EXPECT_GT(compiled.size(), 60u);
}

}  // namespace
}  // namespace kforge
