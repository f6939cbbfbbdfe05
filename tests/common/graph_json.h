// The JSON of graph values and nodes (docs/interfaces.md's graph format), for tests that write graphs by hand.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge::testing {

// A graph input or parameter: f32 unless a "dtype" is added.
inline nlohmann::json value(const std::string& name, std::vector<int64_t> shape) {
  return {{"name", name}, {"shape", shape}};
}

inline nlohmann::json node(const std::string& name, const std::string& op, std::vector<std::string> args,
                           nlohmann::json attrs = nlohmann::json::object()) {
  return {{"name", name}, {"op", op}, {"args", args}, {"attrs", attrs}};
}

}  // namespace kforge::testing
