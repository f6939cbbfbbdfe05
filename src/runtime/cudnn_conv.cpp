#include "runtime/cudnn_conv.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "codegen/plan.h"
#include "codegen/schedule.h"
#include "ir/conv.h"
#include "ir/error.h"
#include "runtime/cudnn_api.h"

namespace kforge {

void check_cudnn(cudnnStatus_t s, const char* call, const char* file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw UserError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  cudnn().cudnnGetErrorString(s));
}

namespace {

// One backend descriptor, destroyed with its scope.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  Desc() = default;
  explicit Desc(cudnnBackendDescriptorType_t type) { KF_CUDNN(cudnn().cudnnBackendCreateDescriptor(type, &d)); }
  ~Desc() {
    if (d) cudnn().cudnnBackendDestroyDescriptor(d);
  }
  Desc(Desc&& o) noexcept : d(o.d) { o.d = nullptr; }
  Desc& operator=(Desc&& o) noexcept {
    std::swap(d, o.d);
    return *this;
  }
  Desc(const Desc&) = delete;
  cudnnBackendDescriptor_t release() { return std::exchange(d, nullptr); }
  template <class T>
  void set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, const std::vector<T>& v) {
    KF_CUDNN(cudnn().cudnnBackendSetAttribute(d, a, t, int64_t(v.size()), v.data()));
  }
  template <class T>
  void set1(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, T v) { set(a, t, std::vector<T>{v}); }
  void finalize() { KF_CUDNN(cudnn().cudnnBackendFinalize(d)); }
};

constexpr int64_t kX = 1, kW = 2, kY = 3;  // the tensors' unique ids in the graph and the variant pack

// Packed strides of [N, C, *spatial] stored channels last ([N, *spatial, C]).
std::vector<int64_t> channels_last_strides(const Shape& dims) {
  std::vector<int64_t> s(dims.size());
  s[1] = 1;
  int64_t step = dims[1];
  for (size_t i = dims.size() - 1; i >= 2; --i) {
    s[i] = step;
    step *= dims[i];
  }
  s[0] = step;
  return s;
}

// The step's x and w element type: float, or the 16-bit copies of an fp16, bf16 or fp16x3 step; its y's: the
// same, except fp16x3's fp32 result (the sum of its three parts' products must not be rounded to fp16).
cudnnDataType_t input_type(Precision p) {
  if (p == Precision::fp16 || p == Precision::fp16x3) return CUDNN_DATA_HALF;
  return p == Precision::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}
cudnnDataType_t result_type(Precision p) { return p == Precision::fp16x3 ? CUDNN_DATA_FLOAT : input_type(p); }

Desc tensor(int64_t uid, const Shape& dims, bool channels_last, cudnnDataType_t type, bool is_virtual = false) {
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  if (is_virtual) {
    const bool yes = true;  // std::vector<bool> has no data(): set the one flag directly
    KF_CUDNN(cudnn().cudnnBackendSetAttribute(t.d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes));
  }
  t.set1(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims);
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, channels_last ? channels_last_strides(dims) : contiguous_strides(dims));
  t.set1(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid);
  t.set1(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, int64_t(16));  // LoadedPlan::run checks 16 bytes
  t.finalize();
  return t;
}

// How an engine computes, from its numerical notes: in full fp32, on tensor cores, with reduced-precision sums,
// or on inputs it down-converts (to fp16 or bf16: neither tier's precision, so never used, as PyTorch never uses
// them for float32 convolutions either).
enum class EngineMath { full, tensor_core, reduced_sums, down_convert };
EngineMath engine_math(cudnnBackendDescriptor_t cfg) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  KF_CUDNN(cudnn().cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine.d));
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  KF_CUDNN(cudnn().cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                            CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes));
  EngineMath math = EngineMath::full;
  for (int64_t i = 0; i < n; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return EngineMath::down_convert;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) math = EngineMath::reduced_sums;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && math == EngineMath::full) math = EngineMath::tensor_core;
  }
  return math;
}

// The heuristic's configurations in the order a precision's `algo` indexes them. fp32: the full-precision ones
// alone (the strict tier's 1e-4). tf32, fp16, bf16: the tensor-core ones (reduced-precision sums included) first,
// then the full-precision ones, each in the heuristic's order; otherwise tf32's first choice could be fp32's own.
// fp16x3 (fp16 parts, fp32 result): the tensor-core ones, then the full ones, never reduced-precision sums,
// which would round away what the lo parts add.
std::vector<Desc> in_precision_order(std::vector<Desc> cfgs, Precision precision) {
  std::vector<Desc> tensor_core, full;
  const bool reduced_sums_allowed = below_fp32(precision);
  for (auto& c : cfgs) {
    EngineMath math = engine_math(c.d);
    if (math == EngineMath::tensor_core || (math == EngineMath::reduced_sums && reduced_sums_allowed))
      tensor_core.push_back(std::move(c));
    if (math == EngineMath::full) full.push_back(std::move(c));
  }
  if (precision == Precision::fp32) return full;
  for (auto& c : full) tensor_core.push_back(std::move(c));
  return tensor_core;
}

// The step's operations: tensor, convolution and CONVOLUTION_FORWARD descriptors, finalized (host only). With an
// epilogue (Stages) the convolution writes a virtual fp32 tensor that pointwise operations carry to y: cuDNN's
// runtime-fusion engines take such graphs. fp16x3's identity form (no engine takes fp16 x and w with an fp32 y
// directly) is the epilogue of no stage.
struct Operation {
  Desc x, w, y, conv, op;
  std::vector<Desc> kept;                       // the epilogue's tensors and pointwise descriptors
  std::vector<cudnnBackendDescriptor_t> stages;  // its pointwise operations (owned by `kept`)
  std::vector<cudnnBackendDescriptor_t> ops() const {
    std::vector<cudnnBackendDescriptor_t> all = {op.d};
    all.insert(all.end(), stages.begin(), stages.end());
    return all;
  }
};
// Ids of the epilogue's tensors: the virtual ones count up from kVirtual (never in the variant pack).
constexpr int64_t kBias = 5, kScale = 6, kVirtual = 100;

// The pointwise operations after the convolution, in order: fp16x3's scale (a product with undo[0]), the bias (a
// sum with one value per channel), the activation. None: an identity copy into y.
struct Stages {
  bool scale = false, bias = false;
  std::optional<Node> activation;
};
Stages stages_of(const nlohmann::json& lib) {
  Stages st;
  if (!lib.contains("epilogue")) return st;
  const nlohmann::json& e = lib.at("epilogue");
  st.scale = e.value("scale", false);
  st.bias = e.value("bias", false);
  if (e.contains("activation")) st.activation = activation_node(e.at("activation"), {DType::f32, {}});
  return st;
}

// A pointwise descriptor of `mode` in fp32 arithmetic, open for the mode's own attributes.
Desc pointwise(cudnnPointwiseMode_t mode) {
  Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set1(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode);
  pw.set1(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  return pw;
}
// The same for a mode without attributes of its own, finalized.
Desc finalized_pointwise(cudnnPointwiseMode_t mode) {
  Desc pw = pointwise(mode);
  pw.finalize();
  return pw;
}

// cuDNN's form of a folded activation (codegen/conv_epilogue.h: is_conv_activation's list), finalized.
Desc activation_mode(const Node& a, const std::string& where) {
  auto f = [&](const char* key) { return a.attr_f(key); };
  const std::string& op = a.op;
  if (op == "relu" || op == "leaky_relu" || op == "hardtanh") {
    // ReLU with clips: x below the lower clip becomes lower + slope (x - lower), above the upper one the upper.
    Desc pw = pointwise(CUDNN_POINTWISE_RELU_FWD);
    if (op == "leaky_relu") pw.set1(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, f("negative_slope"));
    if (op == "hardtanh") {
      pw.set1(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, f("min_val"));
      pw.set1(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, f("max_val"));
    }
    pw.finalize();
    return pw;
  }
  if (op == "sigmoid") return finalized_pointwise(CUDNN_POINTWISE_SIGMOID_FWD);
  if (op == "tanh") return finalized_pointwise(CUDNN_POINTWISE_TANH_FWD);
  if (op == "gelu")
    return finalized_pointwise(a.attrs.value("approximate", "none") == "tanh" ? CUDNN_POINTWISE_GELU_APPROX_TANH_FWD
                                                                                : CUDNN_POINTWISE_GELU_FWD);
  Desc pw;
  if (op == "silu") {
    pw = pointwise(CUDNN_POINTWISE_SWISH_FWD);  // x sigmoid(beta x)
    pw.set1(CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1.0);
  } else if (op == "elu") {
    pw = pointwise(CUDNN_POINTWISE_ELU_FWD);
    pw.set1(CUDNN_ATTR_POINTWISE_ELU_ALPHA, CUDNN_TYPE_DOUBLE, f("alpha"));
  } else {
    throw UserError(where + ": activation '" + op + "' has no cuDNN pointwise mode here");
  }
  pw.finalize();
  return pw;
}

// One pointwise operation y = mode(x[, b]) of the epilogue.
Desc pointwise_op(const Desc& mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y) {
  Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op.set1(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, mode.d);
  op.set1(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x);
  if (b) op.set1(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b);
  op.set1(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y);
  op.finalize();
  return op;
}

// `transpose`: the step is a transposed convolution, the input gradient of the forward convolution `d`
// (CONVOLUTION_BACKWARD_DATA): the step's x is that convolution's output (dy), its y the input (dx).
// `channels_last`: the step's tensors (and weight) are stored NHWC (layout "NHWC"); `type`: their elements'.
// `epilogue`: the pointwise stages after the convolution (nullptr: none, the convolution writes y).
Operation operation(const ConvDims& d, bool transpose, bool channels_last, cudnnDataType_t in_type, cudnnDataType_t out_type,
                    const Stages* epilogue, const std::string& where) {
  // cuDNN's convolutions take 2 or 3 spatial dims: a 1-D one is a 2-D one over a height of 1.
  std::vector<int64_t> in = d.in, kernel = d.kernel, out = d.out, stride = d.stride, pad = d.padding, dil = d.dilation;
  if (in.size() == 1) {
    for (auto* v : {&in, &kernel, &out, &stride, &dil}) v->insert(v->begin(), 1);
    pad.insert(pad.begin(), 0);
  }
  auto dims = [](int64_t a, int64_t b, const std::vector<int64_t>& s) {
    Shape r = {a, b};
    r.insert(r.end(), s.begin(), s.end());
    return r;
  };
  Shape input = dims(d.n, d.c, in), output = dims(d.n, d.o, out);
  const bool cl = channels_last;
  const Shape& ydims = transpose ? input : output;
  Operation o{tensor(kX, transpose ? output : input, cl, in_type), tensor(kW, dims(d.o, d.c / d.groups, kernel), cl, in_type),  // cuDNN
              tensor(kY, ydims, cl, out_type), Desc(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR),  // reads the groups off C / w's C
              Desc(transpose ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                             : CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR),
              {}, {}};
  // The epilogue's virtual fp32 tensors, in the step's layout as y is. (A y in NCHW strides behind an NHWC
  // convolution, which would spare the transpose back, ran 17-500x slower or wrong on the H200.)
  int64_t next_virtual = kVirtual;
  auto virtual_tensor = [&]() -> cudnnBackendDescriptor_t {
    o.kept.push_back(tensor(next_virtual++, ydims, cl, CUDNN_DATA_FLOAT, true));
    return o.kept.back().d;
  };
  cudnnBackendDescriptor_t conv_out = epilogue ? virtual_tensor() : o.y.d;
  Desc& conv = o.conv;
  conv.set1(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  conv.set1(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_CROSS_CORRELATION);  // PyTorch's
  conv.set1(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, int64_t(in.size()));
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pad);
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pad);
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dil);
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride);
  conv.finalize();
  // The operation's attributes: the step's x and y are the forward op's X and Y, the backward-data op's DY and DX.
  struct Names {
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  const Names n = transpose ? Names{CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
                            : Names{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  Desc& op = o.op;
  op.set1(n.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, o.x.d);
  op.set1(n.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, o.w.d);
  op.set1(n.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, conv_out);
  op.set1(n.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, conv.d);
  op.set1(n.alpha, CUDNN_TYPE_FLOAT, 1.0f);
  op.set1(n.beta, CUDNN_TYPE_FLOAT, 0.0f);
  op.finalize();
  if (!epilogue) return o;
  // The stages: each reads the previous one's tensor; the last writes y.
  struct Stage {
    Desc mode;
    cudnnBackendDescriptor_t operand = nullptr;
  };
  std::vector<Stage> stages;
  Shape single(ydims.size(), 1), per_channel = single;
  per_channel[1] = ydims[1];
  if (epilogue->scale) {
    o.kept.push_back(tensor(kScale, single, false, CUDNN_DATA_FLOAT));
    stages.push_back({finalized_pointwise(CUDNN_POINTWISE_MUL), o.kept.back().d});
  }
  if (epilogue->bias) {
    o.kept.push_back(tensor(kBias, per_channel, false, CUDNN_DATA_FLOAT));
    stages.push_back({finalized_pointwise(CUDNN_POINTWISE_ADD), o.kept.back().d});
  }
  if (epilogue->activation) stages.push_back({activation_mode(*epilogue->activation, where)});
  if (stages.empty()) stages.push_back({finalized_pointwise(CUDNN_POINTWISE_IDENTITY)});
  cudnnBackendDescriptor_t from = conv_out;
  for (size_t i = 0; i < stages.size(); ++i) {
    cudnnBackendDescriptor_t to = i + 1 == stages.size() ? o.y.d : virtual_tensor();
    o.kept.push_back(pointwise_op(stages[i].mode, from, stages[i].operand, to));
    o.stages.push_back(o.kept.back().d);
    o.kept.push_back(std::move(stages[i].mode));
    from = to;
  }
  return o;
}

// The operations a step's library block describes (its geometry checked by conv_step_dims first); with
// `identity_form`, an fp16x3 step without an epilogue of its own as the epilogue of no stage.
Operation step_operation(const nlohmann::json& lib, const std::string& where, bool identity_form = false) {
  const Precision p = precision_from_string(lib.value("precision", "fp32"));
  const Stages stages = stages_of(lib);
  const bool epilogue = identity_form || lib.contains("epilogue");
  return operation(conv_step_dims(lib, where), lib.value("op", "") == "conv_transpose", lib.value("layout", "") == "NHWC",
                   input_type(p), result_type(p), epilogue ? &stages : nullptr, where);
}

// The engine configurations the heuristic offers for `graph` under `mode`, best first.
std::vector<Desc> engine_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set1(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, graph);
  heur.set1(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
  heur.finalize();
  int64_t count = 0;
  KF_CUDNN(cudnn().cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<Desc> cfgs;
  for (int64_t i = 0; i < count; ++i) cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (auto& c : cfgs) raw.push_back(c.d);
  KF_CUDNN(cudnn().cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, raw.data()));
  cfgs.resize(size_t(std::clamp<int64_t>(count, 0, int64_t(cfgs.size()))));
  return cfgs;
}

// The handle attributes are deprecated in recent cuDNN 9 releases (9.19 here) in favour of device-property
// descriptors, which older cuDNN 9 releases (the torch wheels') lack; the handle works in all of them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr auto kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr auto kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

}  // namespace

namespace {
// The execution plan of the schedule's engine for one form of the step's graph: the algo-th configuration in the
// precision's order (in_precision_order) whose plan finalizes (an engine may not support this geometry) within
// the workspace cap; fewer: the last such. Mode A first; cuDNN's fallback list only when none of mode A's is
// usable. Empty `plan` when none is; `offered` counts what the heuristic offered.
struct Chosen {
  Desc graph, plan, cfg;
  int64_t workspace = 0;
  int algo_used = 0, offered = 0;
};
Chosen choose_engine(cudnnHandle_t handle, const Operation& op, Precision precision, int algo, int64_t cap) {
  Chosen c;
  c.graph = Desc(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  c.graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, op.ops());
  c.graph.set1(kGraphHandle, CUDNN_TYPE_HANDLE, handle);
  if (cudnn().cudnnBackendFinalize(c.graph.d) != CUDNN_STATUS_SUCCESS) return c;  // no engine takes this graph at all
  int usable = 0;
  for (auto mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (c.plan.d) break;
    std::vector<Desc> offers = engine_configs(c.graph.d, mode);
    c.offered += int(offers.size());
    std::vector<Desc> cfgs = in_precision_order(std::move(offers), precision);
    for (size_t i = 0; i < cfgs.size() && usable <= algo; ++i) {
      Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan.set1(kPlanHandle, CUDNN_TYPE_HANDLE, handle);
      plan.set1(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, cfgs[i].d);
      if (cudnn().cudnnBackendFinalize(plan.d) != CUDNN_STATUS_SUCCESS) continue;
      int64_t ws = 0, n = 0;
      KF_CUDNN(cudnn().cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws));
      if (ws > cap) continue;
      c.plan = std::move(plan);
      c.cfg = std::move(cfgs[i]);
      c.workspace = ws;
      c.algo_used = usable++;
    }
  }
  return c;
}
}  // namespace

CudnnConv::CudnnConv(cudnnHandle_t handle, const nlohmann::json& lib, const std::string& step) : step_(step) {
  const std::string where = "cuDNN step '" + step + "'";
  const Precision precision = precision_from_string(lib.at("precision"));
  const int algo = std::max(0, lib.at("algo").get<int>());
  const int64_t cap = lib.at("workspace_bytes");
  // fp16x3 (fp16 x and w, fp32 y) falls back to the graph through a virtual tensor where no engine takes it directly.
  Operation op = step_operation(lib, where);
  Chosen c = choose_engine(handle, op, precision, algo, cap);
  int offered = c.offered;
  if (!c.plan.d && precision == Precision::fp16x3 && !lib.contains("epilogue")) {
    op = step_operation(lib, where, true);
    c = choose_engine(handle, op, precision, algo, cap);
    offered += c.offered;
  }
  if (!c.plan.d)
    throw UserError(where + ": none of the " + std::to_string(offered) + " engine configurations cuDNN offers for this "
                    "convolution" + (lib.contains("epilogue") ? " with its epilogue " + lib.at("epilogue").dump() : "") +
                    " runs in " + to_string(precision) + " within the " + std::to_string(cap >> 20) + " MiB workspace (try " +
                    (lib.contains("epilogue") ? "the epilogue in a kernel, " : "") + "precision tf32, or a larger workspace_bytes)");
  const Stages epilogue = stages_of(lib);
  has_bias_ = epilogue.bias;
  has_scale_ = epilogue.scale;
  workspace_ = c.workspace;
  algo_used_ = c.algo_used;
  offered_ = offered;
  // The plan is kept with every descriptor it was made from (cudnn_frontend keeps the same chain alive).
  for (Desc* kept : {&op.x, &op.w, &op.y, &op.conv, &op.op, &c.graph, &c.cfg})
    if (kept->d) keep_.push_back(kept->release());
  for (Desc& kept : op.kept) keep_.push_back(kept.release());
  plan_ = c.plan.release();
}

void finalize_conv_operation(const nlohmann::json& library, const std::string& step) {
  step_operation(library, "cuDNN step '" + step + "'");
  if (library.value("precision", "") == "fp16x3" && !library.contains("epilogue"))
    step_operation(library, "cuDNN step '" + step + "'", true);
}

CudnnConv::~CudnnConv() {
  if (plan_) cudnn().cudnnBackendDestroyDescriptor(plan_);
  for (auto it = keep_.rbegin(); it != keep_.rend(); ++it) cudnn().cudnnBackendDestroyDescriptor(*it);
}

void CudnnConv::run(cudnnHandle_t handle, const std::vector<CUdeviceptr>& args, CUstream stream) {
  KF_CUDNN(cudnn().cudnnSetStream(handle, stream));
  std::vector<void*> ptrs = {reinterpret_cast<void*>(args.at(0)), reinterpret_cast<void*>(args.at(1)),
                             reinterpret_cast<void*>(args.at(2))};
  std::vector<int64_t> ids = {kX, kW, kY};
  size_t next = 4;  // after the workspace: the epilogue's bias, then its scale
  for (auto [has, id] : {std::pair{has_bias_, kBias}, std::pair{has_scale_, kScale}})
    if (has) {
      ids.push_back(id);
      ptrs.push_back(reinterpret_cast<void*>(args.at(next++)));
    }
  // The variant pack holds this call's pointers: host-side only, so building it per run is capturable.
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, ids);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs);
  pack.set1(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, reinterpret_cast<void*>(args.at(3)));
  pack.finalize();
  KF_CUDNN(cudnn().cudnnBackendExecute(handle, plan_, pack.d));
}

}  // namespace kforge
