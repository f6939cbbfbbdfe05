#include "server/compile_pool.h"

#include <chrono>

#include "env/evaluator.h"

namespace kforge {

CompilePool::CompilePool(JobStore& store, RawCudaOptions build, int threads, std::function<void()> built)
    : store_(store), build_(std::move(build)), built_(std::move(built)) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

CompilePool::~CompilePool() {
  stopping_ = true;
  for (auto& t : threads_) t.join();
}

void CompilePool::loop() {
  while (!stopping_) {
    std::optional<Job> job = store_.claim_compile();
    if (!job) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a claim is one indexed query: polling is cheap
      continue;
    }
    try {
      compile(*job);
    } catch (const std::exception& e) {  // the service outlives any job
      store_.finish(job->id, false, "", std::string("compile worker error: ") + e.what());
    }
  }
}

void CompilePool::compile(const Job& job) {
  auto payload = nlohmann::json::parse(job.payload);
  RawCudaBuild b = build_raw_cuda(payload.value("source", ""), build_);
  if (b.ok) {
    store_.compiled(job.id, b.so_path);
    built_();
    return;
  }
  EvalResult r;  // not compiled: the answer is nvcc's
  r.compile_ms = b.millis;
  r.log = b.log;
  store_.finish(job.id, true, r.to_json().dump(), "");
}

}  // namespace kforge
