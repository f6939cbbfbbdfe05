#include "runtime/executable.h"

#include "ir/error.h"
#include "runtime/driver.h"

namespace kforge {

Executable::~Executable() {
  if (graph_exec_ && driver_available()) driver().cuGraphExecDestroy(graph_exec_);
}

bool Executable::capture(const Bindings& b, CUstream stream) {
  const Driver& d = driver();
  if (graph_exec_) d.cuGraphExecDestroy(graph_exec_), graph_exec_ = nullptr;
  KF_CU(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  bool ok = true;
  try {
    run(b, stream);
  } catch (const UserError&) {
    ok = false;
  }
  CUgraph graph = nullptr;
  CUresult end = d.cuStreamEndCapture(stream, &graph);
  if (!ok || end != CUDA_SUCCESS || !graph) {
    if (graph) d.cuGraphDestroy(graph);
    return false;
  }
  CUresult inst = d.cuGraphInstantiate(&graph_exec_, graph, 0);
  d.cuGraphDestroy(graph);
  if (inst != CUDA_SUCCESS) graph_exec_ = nullptr;
  return graph_exec_ != nullptr;
}

void Executable::replay(CUstream stream) {
  KF_ASSERT(graph_exec_, "replay before capture");
  KF_CU(driver().cuGraphLaunch(graph_exec_, stream));
}

}  // namespace kforge
