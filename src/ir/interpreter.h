// CPU reference interpreter for primitive graphs (after decompose). Values are held in double precision,
// so it is a reference for the fp32 kernels, not a copy of their rounding. It is what CI checks the
// decompositions against PyTorch with, and what GPU-free tests check generated kernels' logic against.
#pragma once
#include <vector>

#include "ir/graph.h"

namespace kforge {

struct HostTensor {
  TensorType type;
  std::vector<double> data;  // row-major; i64 and bool values stored exactly as doubles
};

// inputs and params in graph order; returns the outputs in graph order.
std::vector<HostTensor> interpret(const Graph& primitive_graph, const std::vector<HostTensor>& inputs,
                                  const std::vector<HostTensor>& params);

}  // namespace kforge
