// Half-precision tasks whose library calls read and write 16-bit values (codegen/half_results.h): a Linear that is
// the task's result, attention (a product, a softmax, a product), an MLP with an erf GELU between its products, and
// two convolutions with arithmetic between them. Each in f16 or bf16, as the importer writes a half-precision
// task (inputs and params in their dtype, read through casts to f32, the result cast back; each product and
// convolution of 16-bit operands marked with the dtype PyTorch stores its result in, "storage_dtype").
#pragma once
#include <string>
#include <vector>

#include "common/sample_graphs.h"

namespace kforge::testing {

// Every graph in `dtype` ("f16" or "bf16").
std::vector<SampleGraph> half_library_graphs(const std::string& dtype);
// A Linear with a bias and a ReLU, x [32, k] times w [64, k] transposed: the graph "linear_relu" at k = 96.
nlohmann::json half_linear(const std::string& dtype, int64_t k);

}  // namespace kforge::testing
