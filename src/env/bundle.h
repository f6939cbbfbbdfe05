// A task bundle on disk (docs/interfaces.md): the graph, the params, the hidden input sets with their
// reference outputs, and the baseline times. Loading checks every file's size against the graph.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kforge {

struct Stats {
  double mean_ms = 0, median_ms = 0, min_ms = 0, std_ms = 0;
  int trials = 0;
};
Stats stats_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Stats& s);

// What the environment needs to know of a task, wherever its data lives.
struct TaskSpec {
  std::string name;
  Graph graph;
  double eager_ms = 0, compile_ms = 0;  // kb-protocol baselines (0 = not measured)
};

struct Bundle {
  std::string dir;
  nlohmann::json task;  // task.json as written by the bridge
  Graph graph;
  std::string name() const { return task.value("name", "task"); }
  int num_sets() const { return task.value("num_sets", 0); }
  Stats eager, compile;  // kb protocol, from import
  bool constant_output = false, near_zero_output = false;
  TaskSpec spec() const { return {name(), graph, eager.median_ms, compile.median_ms}; }
  // Raw bytes of files in the bundle.
  std::string param_bytes(int i) const;
  std::string input_bytes(int set, int i) const;
  std::string output_bytes(int set, int j) const;
};

// Throws UserError naming the file and what is wrong.
Bundle load_bundle(const std::string& dir);
std::string read_file(const std::string& path);

}  // namespace kforge
