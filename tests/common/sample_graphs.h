// Small graphs covering every op family the generator supports, shared by the codegen, interpreter and
// GPU tests. Shapes are small and odd on purpose (tails, broadcasts, middle-dim reductions).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kforge::testing {

struct SampleGraph {
  std::string name;
  nlohmann::json graph;
};

std::vector<SampleGraph> sample_graphs();
// The sample of that name (throws when there is none).
nlohmann::json sample_graph(const std::string& name);
// y = op(x) for x of `shape`, with the op's attributes.
nlohmann::json unary_graph(const std::string& op, std::vector<int64_t> shape, nlohmann::json attrs = nlohmann::json::object());
// The graph of `name` in `samples` (throws when there is none).
nlohmann::json find_graph(const std::vector<SampleGraph>& samples, const std::string& name);

}  // namespace kforge::testing
