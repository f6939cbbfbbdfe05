// Library steps in the search (GPU-free): for matrix products (cuBLASLt) and convolutions (cuDNN), the local
// search and the learned policy's decisions reach both precisions and the heuristic's algorithms / engines,
// every proposal stays legal, and the policy sees the family and the two actions as features.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>

#include "codegen/lower.h"
#include "common/conv_graphs.h"
#include "common/matmul_graphs.h"
#include "search/decisions.h"
#include "search/proposer.h"

namespace kforge {
namespace {

void expect_proposer_reaches_both_precisions(const nlohmann::json& graph) {
  Graph g = graph_from_json(graph);
  ScheduleProposer p(g, 11, true);
  std::set<std::pair<Precision, int>> reached;
  Schedule best;
  for (int i = 0; i < 60; ++i) {
    auto s = p.next(best);
    if (!s) break;
    for (auto& grp : kernel_groups(g, s->fuse_rows)) {
      KernelSchedule ks = schedule_for(*s, grp);  // throws if illegal
      reached.insert({ks.precision, ks.algo});
    }
  }
  EXPECT_TRUE(reached.count({Precision::tf32, 0}) || reached.count({Precision::tf32, 1}));
  EXPECT_GE(reached.size(), 6u);
}

TEST(MatmulSearch, ProposerReachesBothPrecisionsAndSeveralAlgorithms) {
  expect_proposer_reaches_both_precisions(testing::matmul_graph("linear_bias_relu"));
}

TEST(ConvSearch, ProposerReachesBothPrecisionsAndSeveralEngines) {
  expect_proposer_reaches_both_precisions(testing::conv_graph("conv2d_bias_relu"));
}

// After the openings the local search walks the best plan's library calls along their lists: every other index
// once, nothing else of the plan changed; products first (a cuDNN engine may build for seconds), as far as each
// call form's list goes.
TEST(LibrarySearch, BestPlansCallsTryEveryAlgorithmOnce) {
  Graph g = graph_from_json(testing::matmul_graph("linear_bias_relu"));
  ScheduleProposer p(g, 3, true);
  const std::string key = kernel_groups(g, true).front().key;
  Schedule best;
  best.cuda_graph = false;
  best.kernels[key] = {.strategy = Strategy::library, .chunks = 2, .precision = Precision::fp16x3, .algo = 2};
  std::vector<int> algos;
  while (auto s = p.next_algorithm(best)) {
    KernelSchedule ks = s->kernels.at(key);
    Schedule back = *s;
    back.kernels[key].algo = 2;
    EXPECT_EQ(back, best) << "only the algorithm moves";
    algos.push_back(ks.algo);
  }
  EXPECT_EQ(algos, (std::vector<int>{0, 1, 3, 4, 5, 6, 7}));
  // A new best (the default fp32 call) gets its own walk, as far as cuBLASLt's list goes once a measurement said
  // how long it is (indices past it are the last one again).
  p.note_offered(key, {Precision::fp32}, 2, 0, 0);
  p.note_offered(key, {Precision::fp32}, 3, 0, 0);  // a longer list from another step of the group
  std::vector<int> fp32_algos;
  while (auto s = p.next_algorithm(Schedule{})) fp32_algos.push_back(schedule_for(*s, kernel_groups(g, true).front()).algo);
  EXPECT_EQ(fp32_algos, (std::vector<int>{1, 2}));
  // A best whose index is past the list (from the database, say) is the list's last call: the walk skips that one.
  Schedule past = best;
  past.kernels[key] = {.strategy = Strategy::library, .precision = Precision::fp32, .algo = 6};
  std::vector<int> from_past;
  while (auto s = p.next_algorithm(past)) from_past.push_back(s->kernels.at(key).algo);
  EXPECT_EQ(from_past, (std::vector<int>{0, 1}));

  // A convolution walks cuDNN's engines the same way, after every product (none here), each form with its own list.
  Graph conv = graph_from_json(testing::conv_graph("conv2d_bias_relu"));
  ScheduleProposer q(conv, 3, true);
  std::string conv_key;
  for (auto& grp : kernel_groups(conv, true))
    if (grp.kind == GroupKind::conv) conv_key = grp.key;
  ASSERT_FALSE(conv_key.empty());
  Schedule conv_best;
  conv_best.kernels[conv_key] = {.strategy = Strategy::library, .precision = Precision::fp16x3, .layout = Layout::nhwc,
                                 .library_epilogue = true};
  q.note_offered(conv_key, {Precision::fp16x3, "nhwc", false}, 2, 0, 0);  // another form's list: not this one's
  q.note_offered(conv_key, {Precision::fp16x3, "nhwc", true}, 6, 0, 0);
  q.note_offered(conv_key, {Precision::fp16x3, "nhwc", true}, 6, 5, 3);  // offered 6, but index 5 ran as 3
  std::vector<int> engines;
  while (auto s = q.next_algorithm(conv_best)) {
    Schedule back = *s;
    back.kernels[conv_key].algo = 0;
    EXPECT_EQ(back, conv_best) << "only the engine moves";
    engines.push_back(s->kernels.at(conv_key).algo);
  }
  EXPECT_EQ(engines, (std::vector<int>{1, 2, 3}));
}

// Every sample's decisions: rows of the schema's width, and the library group's candidates distinct, one per
// (precision, algo) and per own-kernel choice, flagged as `family`.
void expect_decisions_show(const std::vector<testing::SampleGraph>& samples, const std::string& family,
                           const std::function<size_t(const std::string&)>& choices_of) {
  auto& names = decision_feature_names();
  auto column = [&](const std::string& n) { return size_t(std::find(names.begin(), names.end(), n) - names.begin()); };
  size_t kind = column("group." + family), tf32 = column("action.tf32"), algo = column("action.algo");
  ASSERT_LT(std::max({kind, tf32, algo}), names.size());
  for (auto& sample : samples) {
    PlanDecisions d(graph_from_json(sample.graph), {});
    std::mt19937_64 rng(2);
    d.choose(0);
    bool saw_product = false;
    while (!d.done()) {
      for (auto& r : d.candidates()) ASSERT_EQ(r.size(), names.size()) << sample.name;
      if (d.candidates()[0][kind] == 1.f) {
        saw_product = true;
        std::set<FeatureRow> distinct(d.candidates().begin(), d.candidates().end());
        EXPECT_EQ(distinct.size(), d.candidates().size()) << sample.name;
        EXPECT_EQ(d.candidates().size(), choices_of(sample.name)) << sample.name;
      }
      d.choose(std::uniform_int_distribution<int>(0, int(d.candidates().size()) - 1)(rng));
    }
    EXPECT_TRUE(saw_product) << sample.name;
  }
}

TEST(MatmulSearch, DecisionsShowTheFamilyAndTheActions) {
  // cuBLASLt's algorithms in fp32, tf32, fp16x3 and fp16, fp16x3 also with its reduction in 2 to 64 pieces
  // (powers of two); kforge's mma kernel in tf32x3 and tf32 at 1 or 2 blocks per SM, 1- or 4-float copies.
  expect_decisions_show(testing::matmul_graphs(), "matmul", [](const std::string&) { return 10 * kMatmulAlgos + 8; });
}

TEST(ConvSearch, DecisionsShowTheFamilyAndTheActions) {
  // cuDNN's engines in fp32 and tf32, NCHW and NHWC, and in fp16x3, fp16 and bf16 on NHWC copies, each also with
  // cuDNN's graph applying the epilogue where a bias or activation was folded into the convolution (fp16x3 always:
  // its scales); depthwise convolutions also kforge's direct kernel at two block sizes and three rows per thread.
  expect_decisions_show(testing::conv_graphs(), "conv", [](const std::string& name) {
    const bool epilogue = testing::conv_graph(name)["params"].size() == 2 || name.find("relu") != std::string::npos;
    return size_t(2 * 2 * kConvEngines + 3 * kConvEngines) * (epilogue ? 2 : 1) + (epilogue ? 0 : kConvEngines) +
           (name.find("depthwise") != std::string::npos ? 6 : 0);
  });
}

}  // namespace
}  // namespace kforge
