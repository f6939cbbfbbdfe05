// Every sample graph, under several schedules, run on the GPU against the CPU interpreter (double
// precision) with the strict tier's tolerance. Skips with the reason when there is no GPU; CI runs the
// `cpu` label only, the device check runs this label.
#include <gtest/gtest.h>

#include <random>

#include "codegen/lower.h"
#include "common/device_tensors.h"
#include "common/random_inputs.h"
#include "common/representative_schedules.h"
#include "common/sample_graphs.h"
#include "ir/decompose.h"
#include "runtime/driver.h"
#include "runtime/executor.h"

namespace kforge {
namespace {

class GpuPlans : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  }
};

// Runs `g` under each schedule on the GPU, outputs poisoned first, against the interpreter; the first mismatch
// fails the test with the schedule that made it.
void expect_matches_interpreter(const std::string& name, const Graph& g, const std::vector<Schedule>& schedules) {
  Graph prim = decompose(g);
  std::mt19937_64 rng(42);
  auto inputs = testing::random_values(g, g.inputs, rng);
  auto params = testing::random_values(g, g.params, rng);
  auto expected = interpret(prim, inputs, params);

  Compiler compiler({"sm_90", default_cache_dir(), {}});
  testing::DeviceTensors dev(inputs, params, expected);
  for (auto& s : schedules) {
    LoadedPlan lp(lower(g, s), compiler);
    dev.poison_outputs();
    lp.run(dev.bindings, nullptr);
    KF_CU(driver().cuCtxSynchronize());
    for (size_t j = 0; j < expected.size(); ++j) {
      std::string bad = testing::mismatches(dev.output(j, expected[j].type.dtype), expected[j], 1e-4);
      if (!bad.empty()) {
        ADD_FAILURE() << name << " schedule " << to_json(s).dump() << " output " << j << ":\n" << bad;
        return;
      }
    }
  }
}

TEST_P(GpuPlans, MatchInterpreterUnderEverySchedule) {
  nlohmann::json graph_json;
  for (auto& s : testing::sample_graphs())
    if (s.name == GetParam()) graph_json = s.graph;
  Graph g = graph_from_json(graph_json);
  expect_matches_interpreter(GetParam(), g, testing::representative_schedules(g, true));
}

// Bulk-copied rows (RowCache::bulk) with many rows a block, so that every block prefetches rows into both
// buffers and each barrier's phase turns over several times; odd row lengths put the rows' starts at every
// offset from a 16-byte boundary. The samples' few rows take one row a block.
TEST(GpuRows, BulkRowsPrefetchAcrossManyRowsPerBlock) {
  if (!driver_available()) GTEST_SKIP() << "no CUDA driver or GPU on this machine";
  auto under = [](const Graph& g, int block, int vec = 1) {
    Schedule s;
    s.kernels[kernel_groups(g, true).at(0).key] = {Strategy::block, block, vec, 1, 1, RowCache::bulk};
    return std::vector<Schedule>{s};
  };
  Graph softmax = graph_from_json(testing::unary_graph("softmax", {6000, 1023}, {{"dim", 1}}));
  expect_matches_interpreter("softmax [6000, 1023]", softmax, under(softmax, 1024));
  Graph mean = graph_from_json(testing::unary_graph("mean", {5000, 4093}, {{"dims", {1}}, {"keepdim", true}}));
  expect_matches_interpreter("mean [5000, 4093]", mean, under(mean, 128));
  nlohmann::json ln = {{"inputs", {{{"name", "x"}, {"shape", {700, 20001}}, {"dtype", "f32"}}}},
                       {"params", {{{"name", "w"}, {"shape", {20001}}, {"dtype", "f32"}}, {{"name", "b"}, {"shape", {20001}}, {"dtype", "f32"}}}},
                       {"nodes", {{{"name", "y"}, {"op", "layer_norm"}, {"args", {"x", "w", "b"}},
                                   {"attrs", {{"normalized_ndim", 1}, {"eps", 1e-5}}}}}},
                       {"outputs", {"y"}}};
  Graph layer_norm = graph_from_json(ln);
  expect_matches_interpreter("layer_norm [700, 20001]", layer_norm, under(layer_norm, 512));
  // Rows of whole vectors: 16-byte loads of x and of the weights, 16-byte stores (VecWalk), cached or not.
  ln["inputs"][0]["shape"] = {700, 20000};
  ln["params"][0]["shape"] = ln["params"][1]["shape"] = {20000};
  Graph aligned = graph_from_json(ln);
  std::vector<Schedule> vectors = under(aligned, 512, 4);
  for (KernelSchedule ks : {KernelSchedule{Strategy::block, 256, 4, 4, 1}, KernelSchedule{Strategy::block, 1024, 2, 2, 1}}) {
    vectors.push_back(Schedule{});
    vectors.back().kernels[kernel_groups(aligned, true).at(0).key] = ks;
  }
  expect_matches_interpreter("layer_norm [700, 20000]", aligned, vectors);
}

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (auto& s : testing::sample_graphs()) n.push_back(s.name);
  return n;
}

INSTANTIATE_TEST_SUITE_P(Samples, GpuPlans, ::testing::ValuesIn(names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kforge
