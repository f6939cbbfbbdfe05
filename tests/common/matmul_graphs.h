// Small matmul graphs in every form torch.matmul takes (square, rectangular, batched, vector operands,
// broadcast batch dims, transposed operands through permute views) and the Linear chains whose bias and
// activation fold into the GEMM's epilogue. Shared by the IR, codegen and GPU tests; sizes are odd on
// purpose (no multiple of a tile).
#pragma once
#include <vector>

#include "common/sample_graphs.h"

namespace kforge::testing {

std::vector<SampleGraph> matmul_graphs();
// The matmul sample of that name (throws when there is none).
nlohmann::json matmul_graph(const std::string& name);

}  // namespace kforge::testing
