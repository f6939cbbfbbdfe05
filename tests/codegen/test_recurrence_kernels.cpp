// A recurrence's persistent kernel (codegen/emit_recurrence.cpp): its geometry under the schedule space, the
// unrolled steps where no schedule fits, its source compiled for sm_80-90, and its arithmetic run on the CPU (one block holding every unit of a direction)
// against the interpreter for every cell, direction (and both at once) and option.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>

#include "codegen/lower.h"
#include "codegen/recurrence_unrolling.h"
#include "common/cpu_kernel_runner.h"
#include "common/device_tensors.h"
#include "common/kernel_groups.h"
#include "common/random_inputs.h"
#include "common/recurrence_graphs.h"
#include "common/sample_graphs.h"
#include "ir/decompose.h"
#include "ir/interpreter.h"
#include "runtime/compiler.h"

namespace kforge {
namespace {

const KernelGroup& recurrence_group(const GraphAnalysis& a) { return testing::group_of_kind(a, GroupKind::recurrence); }

TEST(RecurrenceKernels, OneCooperativeKernelWhoseBlocksAllFitTheGpu) {
  for (const auto& c : testing::gpu_recurrence_cases()) {
    Graph g = graph_from_json(testing::recurrence_graph(c));
    GraphAnalysis analysis(g);
    const KernelGroup& grp = recurrence_group(analysis);
    const std::vector<KernelSchedule> space = schedule_space(grp);
    ASSERT_FALSE(space.empty()) << c.name;
    EXPECT_TRUE(is_legal(grp, default_schedule(grp))) << c.name;
    for (const KernelSchedule& ks : space) {
      const RecurrenceTile t = recurrence_tile(grp, ks);
      EXPECT_LE(t.smem_bytes(), kMaxRowCache) << c.name;
      if (ks.strategy == Strategy::tile) {  // the batch-split kernel: any grid, every unit in each cluster
        EXPECT_GE(t.cluster * t.units, c.hidden) << c.name;
        EXPECT_GE(t.batch_groups * t.batch_rows, c.batch) << c.name;
        continue;
      }
      EXPECT_LE(t.blocks, grp.target.sms) << c.name;
      EXPECT_GE(t.blocks * t.units, c.hidden) << c.name;
    }
    Plan p = lower(analysis, Schedule{});
    int loops = 0;
    for (const PlanKernel& k : p.kernels)
      if (k.group == grp.key) {
        ++loops;
        EXPECT_TRUE(k.cooperative);
        EXPECT_EQ(k.grid, recurrence_tile(grp, default_schedule(grp)).blocks);
      }
    EXPECT_EQ(loops, 1) << c.name;
  }
}

TEST(RecurrenceKernels, TheDefaultSpreadsUnitsOverTheSms) {
  Graph g = graph_from_json(testing::recurrence_graph({"lstm_256", "lstm", 8, 16, 256}));
  GraphAnalysis analysis(g);
  const KernelGroup& grp = recurrence_group(analysis);
  const RecurrenceTile t = recurrence_tile(grp, default_schedule(grp));
  EXPECT_EQ(t.units, 2);  // 128 blocks on a 132-SM GPU
  EXPECT_TRUE(t.weights_on_chip);
  // 1024 units, 16 a block: 4 gates x 16 rows x 1024 columns of weights exceed shared memory.
  Graph big = graph_from_json(testing::recurrence_graph({"lstm_1024", "lstm", 4, 4, 1024}));
  GraphAnalysis big_analysis(big);
  KernelSchedule ks = default_schedule(recurrence_group(big_analysis));
  ks.items = 16;
  EXPECT_FALSE(recurrence_tile(recurrence_group(big_analysis), ks).weights_on_chip);
}

TEST(RecurrenceKernels, TheBatchSplitOpeningFillsAWaveWithTheThinnestSlices) {
  // A bidirectional GRU of 128 units, batch 32: one block holds its 197 KB of weights, but 2 x 32 one-row slices
  // are half a wave; clusters of two fill it (128 blocks on 132 SMs).
  Graph g = graph_from_json(testing::recurrence_graph({"gru_128_bidirectional", "gru", 4, 32, 128, false, false, true, true, 2}));
  GraphAnalysis analysis(g);
  const auto split = batch_split_recurrence(recurrence_group(analysis));
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->strategy, Strategy::tile);
  EXPECT_EQ(split->chunks, 2);
  EXPECT_EQ(split->items, 1);
  EXPECT_EQ(recurrence_tile(recurrence_group(analysis), *split).blocks, 128);
  // 512 GRU units, batch 64: 3 MB of weights, 394 KB a block in clusters of eight, 197 KB in clusters of 16
  // (non-portable: the kernel opts in). No slicing fills a single wave; the fewest waves hold 4 rows a slice
  // (8 rows' two steps of state would not fit beside the weights).
  Graph big = graph_from_json(testing::recurrence_graph({"gru_512", "gru", 4, 64, 512}));
  GraphAnalysis big_analysis(big);
  const auto sixteen = batch_split_recurrence(recurrence_group(big_analysis));
  ASSERT_TRUE(sixteen.has_value());
  EXPECT_EQ(sixteen->chunks, 16);
  EXPECT_EQ(sixteen->items, 4);
  for (const PlanKernel& k : lower(big_analysis, Schedule{.kernels = {{recurrence_group(big_analysis).key, *sixteen}}}).kernels)
    if (k.group == recurrence_group(big_analysis).key) EXPECT_EQ(k.cluster, 16);
  // 1024 units: 787 KB a block even in clusters of 16.
  Graph huge = graph_from_json(testing::recurrence_graph({"gru_1024", "gru", 2, 4, 1024}));
  GraphAnalysis huge_analysis(huge);
  EXPECT_FALSE(batch_split_recurrence(recurrence_group(huge_analysis)).has_value());
}

TEST(RecurrenceKernels, ARecurrenceNoScheduleHoldsIsUnrolledIntoItsSteps) {
  // On one SM, 300 hidden units would need a block of 300 units (64 at most), and a cluster of one block their
  // weights (361 KB for a single gate): no schedule; 40 fit.
  const TargetFacts one_sm{90, 1};
  for (const testing::RecurrenceCase& c : std::vector<testing::RecurrenceCase>{
           {"lstm_cell_state", "lstm", 3, 2, 300, true, true},
           {"gru_bidirectional_zero_states", "gru", 4, 3, 300, false, false, true, false, 2},
           {"rnn_relu_no_bias", "rnn_relu", 3, 2, 300, false, false, false},
           {"lstm_both_states", "lstm", 2, 3, 300, false, false, true, true, 1, true}}) {
    Graph g = graph_from_json(testing::recurrence_graph(c));
    std::mt19937_64 rng(5);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    const Graph kept = primitive_graph(g), unrolled = primitive_graph(g, one_sm);
    auto count = [](const Graph& p, const std::string& op) {
      return std::count_if(p.nodes.begin(), p.nodes.end(), [&](const Node& n) { return n.op == op; });
    };
    EXPECT_EQ(count(kept, "recurrence"), 1) << c.name;
    EXPECT_EQ(count(unrolled, "recurrence"), 0) << c.name;
    // A product a step and direction, but for a zero initial state's first step (its product is zero: the bias alone).
    EXPECT_EQ(count(unroll_recurrences_that_do_not_fit(decompose(g), one_sm), "matmul"),
              (c.steps - (c.initial ? 0 : 1)) * c.directions) << c.name;
    EXPECT_EQ(testing::mismatches(interpret(unrolled, inputs, params)[0].data, interpret(kept, inputs, params)[0], 1e-12), "")
        << c.name;
    GraphAnalysis analysis(g, one_sm);
    for (const PlanKernel& k : lower(analysis, Schedule{}).kernels) EXPECT_FALSE(k.cooperative) << c.name;
  }
  Graph fits = graph_from_json(testing::recurrence_graph({"lstm", "lstm", 3, 2, 40}));
  EXPECT_EQ(primitive_graph(fits, one_sm).nodes.back().op, "recurrence");
  // 100 units: no block of units fits one SM, but a cluster of one block holds their weights (161 KB): the
  // default is the batch-split kernel, an ordinary launch.
  Graph split = graph_from_json(testing::recurrence_graph({"lstm_100", "lstm", 3, 2, 100}));
  EXPECT_EQ(primitive_graph(split, one_sm).nodes.back().op, "recurrence");
  GraphAnalysis analysis(split, one_sm);
  EXPECT_EQ(default_schedule(recurrence_group(analysis)).strategy, Strategy::tile);
  for (const PlanKernel& k : lower(analysis, Schedule{}).kernels) EXPECT_FALSE(k.cooperative);
}

// The search's other form of a recurrent graph (Schedule::unroll_recurrences): every recurrence unrolled, whether
// a kernel holds it or not, computing what the kept form computes; a graph without one has no such form.
TEST(RecurrenceKernels, TheUnrolledFormIsAScheduleOfItsOwn) {
  Graph g = graph_from_json(testing::recurrence_graph({"gru_bidirectional", "gru", 3, 4, 40, false, false, true, true, 2}));
  GraphAnalysis analysis(g);
  ASSERT_TRUE(analysis.has_unrolled_form());
  auto count = [](const Graph& p, const std::string& op) {
    return std::count_if(p.nodes.begin(), p.nodes.end(), [&](const Node& n) { return n.op == op; });
  };
  EXPECT_EQ(count(analysis.primitive(), "recurrence"), 1);
  const Graph& steps = analysis.primitive(false, true);
  EXPECT_EQ(count(steps, "recurrence"), 0);
  EXPECT_GE(count(steps, "matmul"), 3 * 2);  // a product a step and direction (and the nodes folding left unread)
  std::mt19937_64 rng(7);
  auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
  EXPECT_EQ(testing::mismatches(interpret(steps, inputs, params)[0].data, interpret(analysis.primitive(), inputs, params)[0], 1e-12), "");
  Schedule unrolled;
  unrolled.unroll_recurrences = true;
  EXPECT_EQ(schedule_from_json(to_json(unrolled)), unrolled);
  const Plan plan = lower(analysis, unrolled);
  EXPECT_EQ(std::count_if(plan.kernels.begin(), plan.kernels.end(), [](const PlanKernel& k) { return k.kind == StepKind::cublaslt; }),
            3 * 2);  // a library call a step and direction
  for (const PlanKernel& k : plan.kernels) EXPECT_FALSE(k.cooperative);
  EXPECT_EQ(explicit_schedule(analysis, unrolled).unroll_recurrences, true);
  // No recurrence: the flag changes nothing.
  GraphAnalysis plain(graph_from_json(testing::sample_graph("softmax")));
  EXPECT_FALSE(plain.has_unrolled_form());
  EXPECT_EQ(&plain.primitive(false, true), &plain.primitive());
}

TEST(RecurrenceKernels, CompileForHopperAndTheDefaultForAmpereAndAda) {
  for (const char* arch : {"sm_80", "sm_89"}) {  // cp.async and 8-byte volatile accesses: sm_80 on
    Compiler compiler({arch, default_cache_dir(), {}});
    Graph g = graph_from_json(testing::recurrence_graph({"lstm_256", "lstm", 8, 16, 256}));
    for (const PlanKernel& k : lower(g, Schedule{}).kernels) {
      if (!k.cooperative) continue;
      CompileResult r = compiler.compile(k.source, k.name);
      EXPECT_TRUE(r.ok) << arch << ":\n" << r.log;
    }
  }
  Compiler compiler({"sm_90", default_cache_dir(), {}});
  for (const auto& c : testing::gpu_recurrence_cases()) {
    Graph g = graph_from_json(testing::recurrence_graph(c));
    GraphAnalysis analysis(g);
    const KernelGroup& grp = recurrence_group(analysis);
    std::vector<KernelSchedule> some = {default_schedule(grp), schedule_space(grp).back()};
    for (const KernelSchedule& ks : schedule_space(grp))
      if (ks.vec == 4) {  // the weights in registers, where the space has them
        some.push_back(ks);
        break;
      }
    if (auto split = batch_split_recurrence(grp)) some.push_back(*split);  // clusters, where the weights fit one
    for (const KernelSchedule& ks : some) {
      Schedule s;
      s.kernels[grp.key] = ks;
      for (const PlanKernel& k : lower(analysis, s).kernels) {
        if (k.group != grp.key) continue;
        CompileResult r = compiler.compile(k.source, k.name);
        EXPECT_TRUE(r.ok) << c.name << ":\n" << r.log;
      }
    }
  }
}

TEST(RecurrenceKernels, MatchTheInterpreterOnTheCpu) {
  if (!testing::host_compiler_available()) GTEST_SKIP() << "no host C++ compiler (c++) on PATH";
  int ran = 0;
  for (const auto& c : testing::small_recurrence_cases()) {
    Graph g = graph_from_json(testing::recurrence_graph(c));
    std::mt19937_64 rng(11);
    auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
    const HostTensor want = interpret(primitive_graph(g), inputs, params)[0];
    GraphAnalysis analysis(g);
    const KernelGroup& grp = recurrence_group(analysis);
    // The plan under `ks` run on the CPU, its blocks one after the other: its mismatches with the interpreter.
    auto mismatches_under = [&](const KernelSchedule& ks) {
      Schedule s;
      s.kernels[grp.key] = ks;
      const Plan p = lower(analysis, s);
      testing::HostPlanBuffers h = testing::plan_buffers_on_cpu(p, inputs, params);
      for (const PlanKernel& k : p.kernels) {
        std::vector<float*> args;
        for (int b : k.args) args.push_back(h.data[size_t(b)].data());
        testing::run_on_cpu(k, args, k.grid);
      }
      return testing::mismatches(h.data[size_t(h.output)], want, 1e-5);
    };
    for (auto [block, vec] : {std::pair{128, 1}, {256, 4}}) {
      // One block holds every unit of a direction: the CPU runs the blocks one after the other, and a direction's
      // block reads only what it published itself. vec 4: the weights in registers, where the hidden size allows.
      KernelSchedule ks = default_schedule(grp);
      ks.block = block;
      ks.vec = vec;
      ks.items = int(std::bit_ceil(uint64_t(c.hidden)));
      if (vec == 4 && c.hidden % 4) continue;
      ASSERT_TRUE(is_legal(grp, ks)) << c.name << " vec " << vec;
      ++ran;
      EXPECT_EQ(mismatches_under(ks), "") << c.name << " block " << block << " vec " << vec;
    }
    // The batch-split kernel in clusters of one block (the CPU has no clusters), slices of 1 and 4 batch rows
    // (the last slice of a batch of 3 or 5 part empty; 4 rows: 4 x 4 tiles where the units allow).
    for (int rows : {1, 4}) {
      const KernelSchedule ks{.strategy = Strategy::tile, .block = 128, .items = rows, .chunks = 1};
      if (!is_legal(grp, ks)) continue;
      ++ran;
      EXPECT_EQ(mismatches_under(ks), "") << c.name << " batch-split, rows " << rows;
    }
  }
  EXPECT_GE(ran, 30);
}

}  // namespace
}  // namespace kforge
