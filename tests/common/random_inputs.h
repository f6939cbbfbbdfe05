// Random host tensors for a graph's inputs and params, drawn to suit each op (positive where a log
// needs it, near one for products, valid class indices for targets).
#pragma once
#include <random>
#include <vector>

#include "ir/interpreter.h"

namespace kforge::testing {

std::vector<HostTensor> random_values(const Graph& g, const std::vector<int>& ids, std::mt19937_64& rng);
// Raw bytes of a host tensor in its dtype (f32, i64 or bool), as the device holds it.
std::string to_bytes(const HostTensor& t);
// Values of raw device bytes.
std::vector<double> from_bytes(const std::string& bytes, DType dtype);

// Multiplies every value of every tensor of `set` by `factor` (inputs of other magnitudes).
void scale_values(std::vector<HostTensor>& set, double factor);

}  // namespace kforge::testing
