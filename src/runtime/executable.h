// Anything the environment can run on a task's buffers: a kforge plan (executor.h) or an untrusted
// candidate's compiled entry point (raw_cuda.h). run() launches asynchronously on the stream; capture()
// records one run as a CUDA graph for replay where the candidate allows it.
#pragma once
#include <cuda.h>

#include <vector>

namespace kforge {

struct Bindings {
  std::vector<CUdeviceptr> inputs, params, outputs;
};

class Executable {
 public:
  virtual ~Executable();
  virtual void run(const Bindings& b, CUstream stream) = 0;
  // Records run(b) as a graph (the bindings are fixed from then on); false when the candidate's work
  // cannot be captured (then callers time run() directly).
  bool capture(const Bindings& b, CUstream stream);
  void replay(CUstream stream);
  bool captured() const { return graph_exec_ != nullptr; }

 private:
  CUgraphExec graph_exec_ = nullptr;
};

}  // namespace kforge
