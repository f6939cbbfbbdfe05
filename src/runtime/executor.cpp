#include "runtime/executor.h"

#include "ir/error.h"
#include "runtime/cublaslt_api.h"
#include "runtime/cudnn_api.h"
#include "runtime/driver.h"

namespace kforge {

namespace {

// The blocks of kernel `f` the current device holds at once: its SMs times the blocks an SM fits.
int64_t resident_blocks(CUfunction f, const PlanKernel& k) {
  const Driver& d = driver();
  CUdevice dev;
  KF_CU(d.cuCtxGetDevice(&dev));
  int sms = 0, per_sm = 0;
  KF_CU(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  KF_CU(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, k.block, size_t(k.smem)));
  if (per_sm < 1) throw UserError("kernel '" + k.name + "' cannot run: not one block of " + std::to_string(k.block) +
                                  " threads and " + std::to_string(k.smem) + " bytes of shared memory fits an SM");
  return int64_t(sms) * per_sm;
}

}  // namespace

LoadedPlan::LoadedPlan(Plan plan, const Compiler& compiler) : plan_(std::move(plan)) {
  const Driver& d = driver();
  ensure_context();
  for (auto& k : plan_.kernels) {
    if (k.kind == StepKind::cublaslt) {
      check_library_step(k, plan_.buffers);  // a plan built in memory, not read from JSON, is checked here
      if (!lt_) KF_CUBLAS(cublaslt().cublasLtCreate(&lt_));
      lt_steps_.push_back(std::make_unique<LtMatmul>(lt_, k.library, k.name));
      dnn_steps_.push_back(nullptr);
      functions_.push_back(nullptr);
      grids_.push_back(0);
      continue;
    }
    if (k.kind == StepKind::cudnn) {
      check_library_step(k, plan_.buffers);
      if (!dnn_) KF_CUDNN(cudnn().cudnnCreate(&dnn_));
      dnn_steps_.push_back(std::make_unique<CudnnConv>(dnn_, k.library, k.name));
      lt_steps_.push_back(nullptr);
      functions_.push_back(nullptr);
      grids_.push_back(0);
      continue;
    }
    lt_steps_.push_back(nullptr);
    dnn_steps_.push_back(nullptr);
    CompileResult r = compiler.compile(k.source, k.name);
    if (!r.ok) throw UserError("kernel '" + k.name + "' does not compile:\n" + r.log);
    compile_ms += r.millis;
    cache_hits += r.cache_hit;
    CUmodule m;
    KF_CU(d.cuModuleLoadData(&m, r.cubin.data()));
    modules_.push_back(m);
    CUfunction f;
    KF_CU(d.cuModuleGetFunction(&f, m, k.name.c_str()));
    // Beyond 48 KB of shared memory in all a kernel must opt in, and the 48 KB count the kernel's static
    // shared memory too: a 49124-byte row cache plus 1 KB of reduction scratch failed to launch (on
    // 32_l2_normalize_rows). Opting in to exactly the dynamic size is always allowed.
    if (k.smem > 0) KF_CU(d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.smem));
    if (k.cluster > kPortableCluster) KF_CU(d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    functions_.push_back(f);
    grids_.push_back(k.persistent ? std::min(k.grid, resident_blocks(f, k)) : k.grid);
    if (k.cooperative && k.grid > resident_blocks(f, k))
      throw UserError("kernel '" + k.name + "' waits for all of its " + std::to_string(k.grid) + " blocks, but this GPU holds " +
                      std::to_string(resident_blocks(f, k)) + " of them at once");
  }
  // Temps start zeroed: a grid barrier's flags (kf_grid_sync, emit_recurrence.cpp) rely on it; nothing else reads a temp
  // before writing it.
  temps_.assign(plan_.buffers.size(), 0);
  for (size_t i = 0; i < plan_.buffers.size(); ++i)
    if (plan_.buffers[i].role == BufferRole::temp) {
      const size_t bytes = std::max<size_t>(16, size_t(plan_.buffers[i].bytes()));
      KF_CU(d.cuMemAlloc(&temps_[i], bytes));
      KF_CU(d.cuMemsetD8Async(temps_[i], 0, bytes, nullptr));
    }
  KF_CU(d.cuCtxSynchronize());
}

LoadedPlan::~LoadedPlan() {
  if (!driver_available()) return;
  const Driver& d = driver();
  for (auto t : temps_)
    if (t) d.cuMemFree(t);
  for (auto m : modules_) d.cuModuleUnload(m);
  lt_steps_.clear();
  if (lt_) cublaslt().cublasLtDestroy(lt_);
  dnn_steps_.clear();
  if (dnn_) cudnn().cudnnDestroy(dnn_);
}

CUdeviceptr LoadedPlan::pointer_of(int buffer, const Bindings& b) const {
  const PlanBuffer& pb = plan_.buffers.at(buffer);
  switch (pb.role) {
    case BufferRole::input: return b.inputs.at(pb.index);
    case BufferRole::param: return b.params.at(pb.index);
    case BufferRole::output: return b.outputs.at(pb.index);
    case BufferRole::temp: return temps_.at(buffer);
  }
  return 0;
}

nlohmann::json LoadedPlan::library_steps() const {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&](size_t i, const char* library, int algo, int offered) {
    const PlanKernel& k = plan_.kernels[i];
    out.push_back({{"step", k.name}, {"group", k.group}, {"library", library}, {"precision", k.library.value("precision", "fp32")},
                   {"layout", k.schedule.value("layout", "")}, {"epilogue", k.schedule.value("epilogue", "")},
                   {"requested", k.library.value("algo", 0)}, {"algo", algo}, {"offered", offered}});
  };
  for (size_t i = 0; i < plan_.kernels.size(); ++i) {
    if (lt_steps_[i]) add(i, "cublaslt", lt_steps_[i]->algo_used(), lt_steps_[i]->candidates());
    if (dnn_steps_[i]) add(i, "cudnn", dnn_steps_[i]->algo_used(), dnn_steps_[i]->offered());
  }
  return out;
}

void LoadedPlan::run(const Bindings& b, CUstream stream) {
  size_t ni = 0, np = 0, no = 0;
  for (auto& pb : plan_.buffers) {
    ni += pb.role == BufferRole::input;
    np += pb.role == BufferRole::param;
    no += pb.role == BufferRole::output;
  }
  if (b.inputs.size() < ni || b.params.size() < np || b.outputs.size() != no)
    throw UserError("plan run: expected " + std::to_string(ni) + " inputs, " + std::to_string(np) + " params and " +
                    std::to_string(no) + " outputs, got " + std::to_string(b.inputs.size()) + ", " +
                    std::to_string(b.params.size()) + " and " + std::to_string(b.outputs.size()));
  for (auto* v : {&b.inputs, &b.params, &b.outputs})
    for (auto p : *v)
      if (p % 16) throw UserError("plan run: device pointer " + std::to_string(p) + " is not 16-byte aligned");
  for (size_t i = 0; i < plan_.kernels.size(); ++i) run_step(i, b, stream);
}

void LoadedPlan::run_step(size_t i, const Bindings& b, CUstream stream) {
  const PlanKernel& k = plan_.kernels.at(i);
  std::vector<CUdeviceptr> ptrs;
  for (int a : k.args) ptrs.push_back(pointer_of(a, b));
  if (lt_steps_[i]) return lt_steps_[i]->run(lt_, ptrs, stream);
  if (dnn_steps_[i]) return dnn_steps_[i]->run(dnn_, ptrs, stream);
  std::vector<void*> params;
  for (auto& p : ptrs) params.push_back(&p);
  const Driver& d = driver();
  if (k.cooperative)
    KF_CU(d.cuLaunchCooperativeKernel(functions_[i], unsigned(grids_[i]), 1, 1, unsigned(k.block), 1, 1, unsigned(k.smem),
                                      stream, params.data()));
  else
    KF_CU(d.cuLaunchKernel(functions_[i], unsigned(grids_[i]), 1, 1, unsigned(k.block), 1, 1, unsigned(k.smem), stream,
                           params.data(), nullptr));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  ensure_context();
  KF_CU(driver().cuMemAlloc(&ptr_, std::max<size_t>(bytes, 16)));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ && driver_available()) driver().cuMemFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ && driver_available()) driver().cuMemFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) { KF_CU(driver().cuMemcpyHtoD(ptr_, host, bytes)); }
void DeviceBuffer::download(void* host, size_t bytes) const { KF_CU(driver().cuMemcpyDtoH(host, ptr_, bytes)); }

}  // namespace kforge
