// Lowering of convolutions (GPU-free): each conv is one cuDNN step whose `library` block holds the geometry
// PyTorch's rules give, its bias runs in the one pointwise kernel that reads the result (with a following
// ReLU) or, where nothing else reads the sum, in the step that writes it (conv_epilogue.h), engines and precision
// are search actions, and plans round-trip through JSON, where a step whose parameters do not fit its buffers
// is refused.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "codegen/lower.h"
#include "ir/decompose.h"
#include "common/plan_steps.h"
#include "runtime/compiler.h"
#include "common/conv_graphs.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/ops.h"
#include "common/random_inputs.h"
#include "search/features.h"
#include "search/measure.h"

namespace kforge {
namespace {

Plan lower_sample(const std::string& name, const Schedule& s = {}) {
  return lower(graph_from_json(testing::conv_graph(name)), s);
}

using testing::steps;

TEST(ConvLowering, EveryConvIsOneCudnnStep) {
  for (auto& s : testing::conv_graphs()) {
    Graph g = graph_from_json(s.graph);
    Plan p = lower(g, {});
    auto lib = steps(p, StepKind::cudnn);
    ASSERT_EQ(lib.size(), 1u) << s.name;
    EXPECT_TRUE(lib[0]->source.empty());
    const auto& l = lib[0]->library;
    bool transposed = s.name.rfind("conv_transpose", 0) == 0;
    EXPECT_EQ(l.at("op"), transposed ? "conv_transpose" : "conv") << s.name;
    EXPECT_EQ(l.at("layout"), "NCHW");
    EXPECT_EQ(l.at("precision"), "fp32") << "the default is the strict tier's arithmetic";
    EXPECT_EQ(l.at("algo"), 0);
    // args: x, w, y, workspace; y is the graph output. The bias and the ReLU of the samples are conv_epilogue.h's
    // fold (nothing but the graph's output reads them): one in-place pass over the output after the step.
    ASSERT_EQ(lib[0]->args.size(), 4u);
    bool permuted = s.name == "conv2d_channels_last_input";  // the view is copied to packed NCHW first
    EXPECT_EQ(p.buffers[lib[0]->args[0]].name, permuted ? "xp" : "x");
    EXPECT_EQ(p.buffers[lib[0]->args[0]].role, permuted ? BufferRole::temp : BufferRole::input);
    EXPECT_EQ(p.buffers[lib[0]->args[1]].name, "w");
    EXPECT_EQ(p.buffers[lib[0]->args[3]].name, "cudnn.workspace");
    EXPECT_EQ(p.buffers[lib[0]->args[3]].bytes(), 64 << 20);
    bool bias = g.params.size() == 2;
    bool relu = s.name.find("relu") != std::string::npos;
    EXPECT_EQ(steps(p, StepKind::nvrtc).size(), size_t(bias || relu) + permuted) << s.name << ": bias and ReLU share one kernel";
    EXPECT_EQ(p.buffers[lib[0]->args[2]].role, BufferRole::output) << s.name;
    if (bias || relu) {
      const PlanKernel& after = *(lib[0] + 1);
      EXPECT_EQ(after.args.back(), lib[0]->args[2]) << s.name << ": the epilogue pass writes y in place";
      EXPECT_EQ(after.args.size(), size_t(1 + bias)) << s.name;
      if (bias) {
        EXPECT_EQ(p.buffers[after.args[0]].name, "bias") << s.name;
      }
      EXPECT_EQ(after.source.find("? r : 0.f)") != std::string::npos, relu) << s.name << ": the ReLU, on the biased value\n" << after.source;
    }
    EXPECT_NO_THROW(check_library_step(*lib[0], p.buffers)) << s.name;
    if (transposed) {  // the forward convolution's geometry: its input is this op's result
      const Node& y = g.at(g.outputs[0]);
      Shape result = {l.at("n").get<int64_t>(), l.at("c").get<int64_t>()};
      for (int64_t v : l.at("in").get<std::vector<int64_t>>()) result.push_back(v);
      EXPECT_EQ(result, y.type.shape) << s.name;
    }
  }
}

TEST(ConvEpilogue, ABiasFoldsIntoTheConvolutionUnlessOnlyElementwiseOpsReadTheSum) {
  auto output_node = [](const std::string& name) {
    Graph prim = primitive_graph(graph_from_json(testing::conv_graph(name)));
    return prim.at(prim.outputs.at(0));
  };
  for (const char* name : {"conv2d", "conv3d", "conv_transpose2d", "conv2d_depthwise_strided_dilated"}) {
    Node n = output_node(name);
    EXPECT_TRUE(is_conv_op(n.op)) << name;
    ASSERT_EQ(n.args.size(), 3u) << name;
  }
  EXPECT_EQ(output_node("conv2d_no_bias").args.size(), 2u);
  // The bias read by a ReLU that the graph returns: both fold (the ReLU as attrs.activation).
  Node relu = output_node("conv2d_bias_relu");
  EXPECT_EQ(relu.op, "conv");
  EXPECT_EQ(relu.args.size(), 3u);
  EXPECT_EQ(relu.attrs.at("activation"), nlohmann::json({{"op", "relu"}, {"attrs", nlohmann::json::object()}}));
  // A ReLU read by another elementwise op: the chain's kernel adds the bias and applies the ReLU for nothing.
  nlohmann::json chain = testing::conv_graph("conv2d_bias_relu");
  chain["nodes"].push_back({{"name", "z"}, {"op", "mul"}, {"args", {"y", "y"}}});
  chain["outputs"] = {"z"};
  Graph unfolded = primitive_graph(graph_from_json(chain));
  EXPECT_EQ(unfolded.at(unfolded.find("y")).op, "relu");
  EXPECT_EQ(unfolded.at(unfolded.at(unfolded.find("y")).args[0]).op, "add");
  // The sum also read by a ReLU (both returned): the add stays, the kernel that reads it computes both.
  nlohmann::json both = testing::conv_graph("conv2d_bias_relu");
  both["outputs"] = {"c", "y"};
  Graph prim = primitive_graph(graph_from_json(both));
  EXPECT_EQ(prim.at(prim.outputs[0]).op, "add");
  // A sum a pooling reads: the step writing the result adds the bias, where a kernel of its own would read and
  // write the whole result once more.
  nlohmann::json reduced = testing::conv_graph("conv2d_bias_relu");
  reduced["nodes"][1] = {{"name", "y"}, {"op", "avg_pool"}, {"args", {"c"}},
                         {"attrs", {{"nd", 2}, {"kernel", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}}, {"count_include_pad", true}}}};
  Graph folded = primitive_graph(graph_from_json(reduced));
  bool conv_with_bias = false;
  for (const Node& n : folded.nodes) conv_with_bias |= is_conv_op(n.op) && n.args.size() == 3;
  EXPECT_TRUE(conv_with_bias);
  for (const Node& n : folded.nodes) EXPECT_NE(n.op, "add") << "the bias add is gone";
  // An activation without a bias, before a pooling: it folds alone.
  nlohmann::json pooled = testing::conv_graph("conv2d_no_bias");
  pooled["nodes"][0]["name"] = "c";
  pooled["nodes"].push_back({{"name", "a"}, {"op", "gelu"}, {"args", {"c"}}, {"attrs", {{"approximate", "tanh"}}}});
  pooled["nodes"].push_back({{"name", "y"}, {"op", "max_pool"}, {"args", {"a"}},
                             {"attrs", {{"nd", 2}, {"kernel", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}}}}});
  Graph pooled_prim = primitive_graph(graph_from_json(pooled));
  const Node& gelu = pooled_prim.at(pooled_prim.at(pooled_prim.outputs[0]).args[0]);
  EXPECT_EQ(gelu.op, "conv");
  EXPECT_EQ(gelu.args.size(), 2u);
  EXPECT_EQ(gelu.attrs.at("activation").at("attrs").at("approximate"), "tanh");
  // Not an activation cuDNN has (exp), nor one read twice.
  nlohmann::json exp = testing::conv_graph("conv2d_bias_relu");
  exp["nodes"][1]["op"] = "exp";
  Graph exp_prim = primitive_graph(graph_from_json(exp));
  EXPECT_EQ(exp_prim.at(exp_prim.outputs[0]).op, "exp");
  // The folded graphs compute what the originals do.
  for (const nlohmann::json& sample : {testing::conv_graph("conv2d_asymmetric"), reduced, testing::conv_graph("conv2d_bias_relu"), pooled}) {
  Graph g = graph_from_json(sample);
  std::mt19937_64 rng(5);
  auto inputs = testing::random_values(g, g.inputs, rng), params = testing::random_values(g, g.params, rng);
  auto want = interpret(decompose(g), inputs, params), got = interpret(primitive_graph(g), inputs, params);
  ASSERT_EQ(got.at(0).data.size(), want.at(0).data.size());
  for (size_t i = 0; i < got[0].data.size(); ++i) ASSERT_NEAR(got[0].data[i], want[0].data[i], 1e-12) << i;
  }
}

TEST(ConvLowering, TheBlockHoldsTorchsGeometry) {
  Plan p = lower_sample("conv2d_strided_dilated_padded");
  const auto& l = steps(p, StepKind::cudnn)[0]->library;
  EXPECT_EQ(l.at("n"), 1);
  EXPECT_EQ(l.at("c"), 4);
  EXPECT_EQ(l.at("o"), 6);
  EXPECT_EQ(l.at("groups"), 1);
  EXPECT_EQ(l.at("in"), (Shape{23, 21}));
  EXPECT_EQ(l.at("kernel"), (Shape{3, 3}));
  EXPECT_EQ(l.at("out"), (Shape{13, 6}));
  EXPECT_EQ(l.at("stride"), (Shape{2, 3}));
  EXPECT_EQ(l.at("padding"), (Shape{3, 1}));
  EXPECT_EQ(l.at("dilation"), (Shape{2, 3}));
  Plan depthwise = lower_sample("conv2d_depthwise");
  const auto& dw = steps(depthwise, StepKind::cudnn)[0]->library;
  EXPECT_EQ(dw.at("groups"), 6);
  EXPECT_EQ(dw.at("c"), 6);
  Plan one_d = lower_sample("conv1d");
  EXPECT_EQ(steps(one_d, StepKind::cudnn)[0]->library.at("in"), (Shape{37}));
}

TEST(ConvLowering, FlopsCountForTheRoofline) {
  Graph g = graph_from_json(testing::conv_graph("conv2d_grouped"));  // [2, 12, 9, 10] out, 2 x 3 x 3 per output
  EXPECT_EQ(roofline_flops(g), 2.0 * 2 * 12 * 9 * 10 * 2 * 9);
}

TEST(ConvSchedule, PrecisionAndEngineAreSearchActions) {
  Graph g = graph_from_json(testing::conv_graph("conv2d_no_bias"));
  auto groups = kernel_groups(g, true);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].kind, GroupKind::conv);
  KernelSchedule def = default_schedule(groups[0]);
  EXPECT_EQ(def.strategy, Strategy::library);
  EXPECT_EQ(def.precision, Precision::fp32);
  auto space = schedule_space(groups[0]);
  EXPECT_EQ(space.size(), size_t(2 * 2 * kConvEngines + 3 * kConvEngines + kConvEngines))
      << "fp32 and tf32 engines, each in NCHW and NHWC; fp16x3, fp16 and bf16 in NHWC (their copies come from its "
         "transposes); fp16x3 also with its scales undone in cuDNN's graph (no bias, no activation: nothing else for "
         "a library epilogue to do)";
  KernelSchedule idle = def;
  idle.library_epilogue = true;
  try {
    check_schedule(groups[0], idle);
    ADD_FAILURE() << "a library epilogue with nothing to do was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("leaves cuDNN nothing to do"), std::string::npos) << e.what();
  }
  KernelSchedule half_nchw = def;
  half_nchw.precision = Precision::fp16;
  try {
    check_schedule(groups[0], half_nchw);
    ADD_FAILURE() << "fp16 on NCHW tensors was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("needs layout nhwc"), std::string::npos) << e.what();
  }
  for (auto& ks : space) EXPECT_NO_THROW(check_schedule(groups[0], ks));
  Schedule a, b;
  a.kernels[groups[0].key] = space[0];
  b.kernels[groups[0].key] = {.strategy = Strategy::library, .precision = Precision::tf32, .algo = kConvEngines - 1};
  EXPECT_NE(plan_key(lower(g, a)), plan_key(lower(g, b)));
  Plan tf32 = lower(g, b);
  EXPECT_TRUE(tf32.below_fp32()) << "a TF32 engine computes on inputs rounded below fp32";
  EXPECT_EQ(steps(tf32, StepKind::cudnn)[0]->library.at("algo"), kConvEngines - 1);
  KernelSchedule bad = def;
  bad.algo = kConvEngines;
  try {
    check_schedule(groups[0], bad);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("an index into cuDNN's engine heuristic"), std::string::npos) << e.what();
  }
  bad = def;
  bad.strategy = Strategy::flat;
  EXPECT_THROW(check_schedule(groups[0], bad), UserError);
}

TEST(ConvPlanJson, CudnnStepsRoundTrip) {
  Graph g = graph_from_json(testing::conv_graph("conv3d"));
  Schedule s;
  s.kernels[kernel_groups(g, true)[0].key] = {Strategy::library, 256, 1, 1, 1, RowCache::none, Precision::tf32, 2};
  Plan p = lower(g, s);
  Plan back = Plan::from_json(nlohmann::json::parse(p.to_json().dump()));
  auto lib = steps(back, StepKind::cudnn);
  ASSERT_EQ(lib.size(), 1u);
  EXPECT_EQ(lib[0]->library, steps(p, StepKind::cudnn)[0]->library);
  EXPECT_EQ(lib[0]->library.at("algo"), 2);
  EXPECT_EQ(back.schedule, s);
  EXPECT_EQ(back.to_json(), p.to_json());
}

TEST(ConvPlanJson, CudnnStepsMustFitTheirBuffers) {
  nlohmann::json good = lower_sample("conv2d_grouped").to_json();
  size_t step = 0;
  while (good["kernels"][step].value("kind", "") != "cudnn") ++step;
  EXPECT_NO_THROW(Plan::from_json(good));
  auto refused = [&](const std::string& why, auto edit) { testing::expect_step_refused(good, step, why, edit); };
  // x is [2, 8, 9, 10] = 1440 elements; a batch of 3 would read past it.
  refused("x needs 2160 f32 elements, buffer 'x' holds 1440", [](auto& k) {
    k["library"]["n"] = 3;
    k["library"]["out"] = {9, 10};
  });
  refused("w needs 432 f32 elements", [](auto& k) { k["library"]["groups"] = 2; });  // C/groups 4 per filter
  refused("out [9,11] disagrees with the geometry [9, 10]", [](auto& k) { k["library"]["out"] = {9, 11}; });
  refused("kernel extent 12 (dilated) exceeds", [](auto& k) { k["library"]["kernel"] = {12, 3}; });
  refused("takes 4 buffers, got 3", [](auto& k) { k["args"].erase(k["args"].end() - 1); });
  refused("layout must be NCHW or NHWC", [](auto& k) { k["library"]["layout"] = "CHWN"; });
  refused("malformed parameters", [](auto& k) { k["library"].erase("dilation"); });
  refused("of kind cudnn has op 'matmul'", [](auto& k) { k["library"]["op"] = "matmul"; });
  refused("of kind cublaslt has op 'conv'", [](auto& k) { k["kind"] = "cublaslt"; });
  // 16-bit steps: NHWC only, on 16-bit buffers (an f32 buffer read as halves would be garbage, not an error).
  refused("precision fp16 needs layout NHWC", [](auto& k) { k["library"]["precision"] = "fp16"; });
  refused("x needs 1440 bf16 elements, buffer 'x' holds 1440 f32", [](auto& k) {
    k["library"]["precision"] = "bf16";
    k["library"]["layout"] = "NHWC";
  });
  refused("precision tf32x3 is for matrix products only", [](auto& k) { k["library"]["precision"] = "tf32x3"; });
  refused("precision fp16x3 needs layout NHWC", [](auto& k) { k["library"]["precision"] = "fp16x3"; });
  refused("x needs 1440 f16 elements, buffer 'x' holds 1440 f32", [](auto& k) {  // fp16x3 reads fp16 parts
    k["library"]["precision"] = "fp16x3";
    k["library"]["layout"] = "NHWC";
  });
}

// Channels last (schedule layout nhwc): the step works on channels-last copies, transposed in before it and out
// after it by generated kernels that compile for sm_90 (tests/runtime/test_cudnn_operation.cpp has cuDNN
// accept the NHWC operation of every sample).
TEST(ConvLayout, NhwcTransposesAroundTheStepAndCudnnAcceptsIt) {
  Compiler c({"sm_90", "", {}});
  for (auto& sample : testing::conv_graphs()) {
    Graph g = graph_from_json(sample.graph);
    Schedule s;
    for (auto& grp : kernel_groups(g, true))
      if (grp.kind == GroupKind::conv) s.kernels[grp.key] = {.strategy = Strategy::library, .layout = Layout::nhwc};
    Plan p = lower(g, s);
    auto lib = steps(p, StepKind::cudnn);
    ASSERT_EQ(lib.size(), 1u) << sample.name;
    EXPECT_EQ(lib[0]->library.at("layout"), "NHWC");
    size_t at = size_t(lib[0] - &p.kernels[0]);
    ASSERT_GE(at, 2u);
    ASSERT_LT(at + 1, p.kernels.size());
    // x and w in, the result out; the step reads and writes only the channels-last temps.
    const PlanKernel &x_in = p.kernels[at - 2], &w_in = p.kernels[at - 1], &y_out = p.kernels[at + 1];
    EXPECT_EQ(x_in.args[1], lib[0]->args[0]);
    EXPECT_EQ(w_in.args[1], lib[0]->args[1]);
    EXPECT_EQ(y_out.args[0], lib[0]->args[2]);
    // A bias (and an activation) nothing else reads rides on the transpose back (conv_epilogue.h): src, bias, dst;
    // no kernel after it.
    const bool bias = g.params.size() == 2;
    EXPECT_EQ(y_out.args.size(), bias ? 3u : 2u) << sample.name;
    EXPECT_EQ(at + 2, p.kernels.size()) << sample.name;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(p.buffers[lib[0]->args[i]].role, BufferRole::temp) << sample.name;
    EXPECT_EQ(p.buffers[w_in.args[0]].name, "w");
    for (const PlanKernel* k : {&x_in, &w_in, &y_out}) {
      CompileResult r = c.compile(k->source, k->name);
      ASSERT_TRUE(r.ok) << sample.name << "\n" << r.log << "\n" << k->source;
    }
    EXPECT_NO_THROW(check_library_step(*lib[0], p.buffers));
    EXPECT_EQ(Plan::from_json(p.to_json()).schedule, s) << "the layout round-trips through JSON";
  }
}

// A convolution of a half-precision task's own input and weight (ir/half_operands.h): channels last in the tensors'
// dtype, its transposes reading them as stored (no stored cast); nothing else is legal. A depthwise one keeps
// kforge's f32 kernel, its casts stored.
TEST(ConvHalfOperands, TheTransposesInReadTheTensorsAsStored) {
  Compiler c({"sm_90", "", {}});
  for (const std::string dtype : {"f16", "bf16"}) {
    for (int64_t groups : {1, 8}) {
      Graph g = graph_from_json(nlohmann::json::parse(R"({"inputs": [{"name": "x", "shape": [2, 8, 10, 10], "dtype": ")" + dtype + R"("}],
        "params": [{"name": "w", "shape": [8, )" + std::to_string(8 / groups) + R"(, 3, 3], "dtype": ")" + dtype + R"("}],
        "nodes": [{"name": "xf", "op": "cast", "args": ["x"], "attrs": {"dtype": "f32"}},
                  {"name": "wf", "op": "cast", "args": ["w"], "attrs": {"dtype": "f32"}},
                  {"name": "y", "op": "conv", "args": ["xf", "wf"], "attrs": {"padding": [1, 1], "groups": )" + std::to_string(groups) + R"(}},
                  {"name": "out", "op": "cast", "args": ["y"], "attrs": {"dtype": ")" + dtype + R"("}}],
        "outputs": ["out"]})"));
      GraphAnalysis analysis(g);
      const KernelGroup* conv = nullptr;
      for (const KernelGroup& k : analysis.groups(true))
        if (k.kind == GroupKind::conv) conv = &k;
      ASSERT_NE(conv, nullptr);
      Plan p = lower(analysis, {});
      std::set<std::string> names;
      for (const PlanBuffer& b : p.buffers) names.insert(b.name);
      if (groups == 8) {  // depthwise: kforge's own f32 kernel reads the stored casts
        EXPECT_FALSE(conv->half_operands.has_value());
        EXPECT_TRUE(names.count("xf") && names.count("wf"));
        continue;
      }
      ASSERT_TRUE(conv->half_operands.has_value()) << dtype;
      const KernelSchedule ks = default_schedule(*conv);
      EXPECT_EQ(ks.layout, Layout::nhwc);
      EXPECT_EQ(to_string(ks.precision), dtype == "f16" ? "fp16" : "bf16");
      KernelSchedule nchw = ks;
      nchw.layout = Layout::nchw;
      EXPECT_THROW(check_schedule(*conv, nchw), UserError);
      auto lib = steps(p, StepKind::cudnn);
      ASSERT_EQ(lib.size(), 1u);
      EXPECT_FALSE(names.count("xf") || names.count("wf")) << "no stored cast";
      size_t at = size_t(lib[0] - &p.kernels[0]);
      ASSERT_GE(at, 2u);
      const PlanKernel &x_in = p.kernels[at - 2], &w_in = p.kernels[at - 1];
      EXPECT_EQ(p.buffers[x_in.args[0]].name, "x");
      EXPECT_EQ(p.buffers[w_in.args[0]].name, "w");
      EXPECT_NE(x_in.source.find("const unsigned short* __restrict__ src"), std::string::npos) << x_in.source;
      for (const PlanKernel* k : {&x_in, &w_in}) {
        CompileResult r = c.compile(k->source, k->name);
        EXPECT_TRUE(r.ok) << r.log;
      }
      EXPECT_NO_THROW(check_library_step(*lib[0], p.buffers));
    }
  }
}

// kforge's direct depthwise kernel (strategy tile): offered for 2-D depthwise convolutions only, one generated
// kernel reading x and w (and the bias) and writing the result, every tile shape
// of the space compiling for sm_90 with its taps, window column and accumulators in registers.
TEST(ConvDirect, DepthwiseConvolutionsGetKforgesOwnKernel) {
  Compiler c({"sm_90", "", {"--ptxas-options=-v"}});
  int depthwise = 0;
  for (auto& sample : testing::conv_graphs()) {
    Graph g = graph_from_json(sample.graph);
    for (auto& grp : kernel_groups(g, true)) {
      if (grp.kind != GroupKind::conv) continue;
      KernelSchedule tile{.strategy = Strategy::tile, .items = 4};
      if (!grp.depthwise) {
        EXPECT_THROW(check_schedule(grp, tile), UserError) << sample.name;
        continue;
      }
      ++depthwise;
      int offered = 0;
      for (auto& ks : schedule_space(grp)) {
        if (ks.strategy != Strategy::tile) continue;
        ++offered;
        Schedule s;
        s.kernels[grp.key] = ks;
        Plan p = lower(g, s);
        EXPECT_TRUE(steps(p, StepKind::cudnn).empty()) << sample.name;
        const PlanKernel& k = p.kernels.at(0);
        // A bias that nothing else reads is added as the kernel writes (conv_epilogue.h): one kernel in all.
        const bool bias = g.params.size() == 2;
        ASSERT_EQ(k.args.size(), bias ? 4u : 3u);
        EXPECT_EQ(p.buffers[k.args[0]].name, "x");
        EXPECT_EQ(p.buffers[k.args[1]].name, "w");
        if (bias) {
          EXPECT_EQ(p.buffers[k.args[2]].name, "bias");
        }
        EXPECT_EQ(p.buffers[k.args.back()].role, BufferRole::output);
        EXPECT_EQ(k.block, ks.block);
        EXPECT_EQ(p.kernels.size(), 1u) << sample.name;
        CompileResult r = c.compile(k.source, k.name);
        ASSERT_TRUE(r.ok) << sample.name << "\n" << r.log << "\n" << k.source;
        // The taps (25-49 floats), the window column and the accumulators are registers: an array of them in
        // local memory would take a stack frame of 100 bytes or more (ptxas may still park a word or two there).
        std::smatch m;
        ASSERT_TRUE(std::regex_search(r.log, m, std::regex(R"((\d+) bytes stack frame)"))) << r.log;
        EXPECT_LT(std::stoi(m[1]), 32) << sample.name << " " << to_json(ks).dump() << ":\n" << r.log;
        EXPECT_EQ(Plan::from_json(p.to_json()).schedule, s);
      }
      EXPECT_EQ(offered, 6) << sample.name;
      // Neither fp32's alternatives nor another layout: the kernel is plain fp32 on NCHW.
      EXPECT_THROW(check_schedule(grp, {.strategy = Strategy::tile, .items = 4, .precision = Precision::tf32}), UserError);
      EXPECT_THROW(check_schedule(grp, {.strategy = Strategy::tile, .items = 3}), UserError);
    }
  }
  EXPECT_EQ(depthwise, 4);
}

// A window larger than static shared memory is refused by name, not launched.
TEST(ConvDirect, AWindowBeyondStaticSharedMemoryIsRefused) {
  nlohmann::json j = testing::conv_graph("conv2d_depthwise");
  j["nodes"][0]["attrs"]["stride"] = {4, 4};
  j["nodes"][0]["attrs"]["dilation"] = {3, 3};
  Graph g = graph_from_json(j);
  KernelGroup grp = kernel_groups(g, true).at(0);
  ASSERT_TRUE(grp.depthwise.has_value());
  KernelSchedule big{.strategy = Strategy::tile, .block = 256, .items = 8};  // 64 x 32 outputs at stride 4
  EXPECT_GT(direct_conv_tile(*grp.depthwise, big).smem_bytes, kMaxStaticSmem);
  try {
    check_schedule(grp, big);
    ADD_FAILURE() << "accepted a window of " << direct_conv_tile(*grp.depthwise, big).smem_bytes << " bytes";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge
