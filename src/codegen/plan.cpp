#include "codegen/plan.h"

#include "ir/error.h"
#include "ir/ops.h"

namespace kforge {

std::string to_string(BufferRole r) {
  switch (r) {
    case BufferRole::input: return "input";
    case BufferRole::param: return "param";
    case BufferRole::output: return "output";
    case BufferRole::temp: return "temp";
  }
  return "?";
}

std::string to_string(StepKind k) {
  switch (k) {
    case StepKind::nvrtc: return "nvrtc";
    case StepKind::cublaslt: return "cublaslt";
    case StepKind::cudnn: return "cudnn";
  }
  return "?";
}

namespace {
StepKind step_kind_from_string(const std::string& s) {
  for (auto k : {StepKind::nvrtc, StepKind::cublaslt, StepKind::cudnn})
    if (to_string(k) == s) return k;
  throw UserError("plan: unknown kernel kind '" + s + "' (nvrtc, cublaslt or cudnn)");
}

BufferRole role_from_string(const std::string& s) {
  for (auto r : {BufferRole::input, BufferRole::param, BufferRole::output, BufferRole::temp})
    if (to_string(r) == s) return r;
  throw UserError("plan: unknown buffer role '" + s + "'");
}
}  // namespace

int64_t Plan::min_bytes() const {
  int64_t b = 0;
  for (auto& buf : buffers)
    if (buf.role != BufferRole::temp) b += buf.bytes();
  return b;
}

bool Plan::below_fp32() const {
  // tf32x3 and fp16x3 (split precision) reach fp32's accuracy: they are judged by the strict tier like fp32. Any
  // other name (tf32, fp16, bf16, or one this build does not know) computes below it.
  for (auto& k : kernels) {
    const std::string p = (k.kind != StepKind::nvrtc ? k.library : k.schedule).value("precision", "fp32");
    if (p != "fp32" && p != "tf32x3" && p != "fp16x3") return true;
  }
  return false;
}

nlohmann::json Plan::to_json() const {
  nlohmann::json j = {{"graph_hash", graph_hash}, {"schedule", kforge::to_json(schedule)},
                      {"buffers", nlohmann::json::array()}, {"kernels", nlohmann::json::array()}};
  for (auto& b : buffers)
    j["buffers"].push_back({{"role", to_string(b.role)}, {"index", b.index}, {"name", b.name},
                            {"dtype", to_string(b.dtype)}, {"shape", b.shape}});
  for (auto& k : kernels) {
    j["kernels"].push_back({{"name", k.name}, {"group", k.group}, {"source", k.source}, {"args", k.args},
                            {"grid", k.grid}, {"block", k.block}, {"smem", k.smem}, {"schedule", k.schedule}});
    if (k.kind != StepKind::nvrtc) j["kernels"].back().update({{"kind", to_string(k.kind)}, {"library", k.library}});
    if (k.persistent) j["kernels"].back()["persistent"] = true;
    if (k.cooperative) j["kernels"].back()["cooperative"] = true;
    if (k.cluster > 1) j["kernels"].back()["cluster"] = k.cluster;
  }
  return j;
}

Plan Plan::from_json(const nlohmann::json& j) {
  Plan p;
  try {
    p.graph_hash = j.value("graph_hash", "");
    p.schedule = schedule_from_json(j.value("schedule", nlohmann::json::object()));
    for (auto& b : j.at("buffers"))
      p.buffers.push_back({role_from_string(b.at("role")), b.at("index").get<int>(), b.at("name"),
                           dtype_from_string(b.at("dtype")), b.at("shape").get<Shape>()});
    for (auto& k : j.at("kernels")) {
      PlanKernel pk{k.at("name"), k.value("group", ""), k.at("source"), k.at("args").get<std::vector<int>>(),
                    k.at("grid").get<int64_t>(), k.at("block").get<int>(), k.value("smem", 0),
                    k.value("schedule", nlohmann::json()), step_kind_from_string(k.value("kind", "nvrtc")),
                    k.value("library", nlohmann::json())};
      pk.persistent = k.value("persistent", false);
      pk.cooperative = k.value("cooperative", false);
      pk.cluster = k.value("cluster", 1);
      if (pk.kind != StepKind::nvrtc && !pk.library.is_object())
        throw UserError("plan: library step '" + pk.name + "' has no 'library' parameter block");
      for (int a : pk.args)
        if (a < 0 || a >= int(p.buffers.size()))
          throw UserError("plan: kernel '" + pk.name + "' uses buffer " + std::to_string(a) + ", which does not exist");
      if (pk.kind != StepKind::nvrtc) check_library_step(pk, p.buffers);
      p.kernels.push_back(std::move(pk));
    }
  } catch (const nlohmann::json::exception& e) {
    throw UserError(std::string("plan JSON is malformed: ") + e.what());
  }
  return p;
}

void check_library_step(const PlanKernel& k, const std::vector<PlanBuffer>& buffers) {
  std::string op = k.library.is_object() ? k.library.value("op", "") : "";
  bool known = k.kind == StepKind::cublaslt ? op == "matmul" : k.kind == StepKind::cudnn && is_conv_op(op);
  if (!known)
    throw UserError("plan: library step '" + k.name + "' of kind " + to_string(k.kind) + " has op '" + op +
                    "' (cublaslt runs matmul, cudnn runs conv and conv_transpose)");
  if (k.kind == StepKind::cublaslt) check_matmul_step(k, buffers);
  else check_conv_step(k, buffers);
}

void check_step_buffers(const PlanKernel& k, const std::vector<PlanBuffer>& buffers, const std::vector<StepOperand>& need,
                        const std::string& where) {
  if (k.args.size() != need.size())
    throw UserError(where + ": takes " + std::to_string(need.size()) + " buffers, got " + std::to_string(k.args.size()));
  for (size_t i = 0; i < need.size(); ++i) {
    const PlanBuffer& b = buffers.at(k.args[i]);
    if (b.dtype != need[i].dtype || numel(b.shape) < need[i].elements)
      throw UserError(where + ": " + need[i].name + " needs " + std::to_string(need[i].elements) + " " +
                      to_string(need[i].dtype) + " elements, buffer '" + b.name + "' holds " + std::to_string(numel(b.shape)) +
                      " " + to_string(b.dtype));
  }
}

}  // namespace kforge
