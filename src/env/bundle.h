// A task bundle on disk (docs/interfaces.md): the graph, the params, the hidden input sets with their
// reference outputs, and the baseline times. Loading checks every file's size against the graph.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "env/verify.h"
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

// A bundle file mapped read-only: a task's hidden sets can be several GB, and a fresh evaluation process
// uploads them straight from the page cache (tmpfs, for a service that keeps its bundles in /dev/shm)
// without copying them into its own memory first.
class MappedFile {
 public:
  // Throws UserError naming the file when it cannot be read or does not hold `expected_bytes`.
  MappedFile(const std::string& path, int64_t expected_bytes);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// An input set drawn for one batch of evaluations (python/kforge/drawn_sets.py), beside the stored ones: fresh
// from get_inputs under a seed nobody stored, or `beyond` get_inputs' distribution (a verdict of its own).
struct DrawnSet {
  std::string dir;  // in<i>.bin, and out<j>.bin where the references are this process's to see
  bool beyond = false;
  std::string how;  // what was drawn, for the log
};

struct Bundle {
  std::string dir;
  nlohmann::json task;  // task.json as written by the bridge
  Graph graph;
  std::string name() const { return task.value("name", "task"); }
  // Sets are numbered stored first (sets/<k>/), then the drawn fresh ones, then the drawn beyond ones: the
  // first declared_sets() are get_inputs' distribution (the KernelBench-compatible verdict), the rest beyond it.
  std::vector<DrawnSet> drawn;
  int stored_sets() const { return task.value("num_sets", 0); }
  int num_sets() const { return stored_sets() + int(drawn.size()); }
  int declared_sets() const;
  std::string set_dir(int set) const;
  Stats eager, compile;  // kb protocol, from import
  bool constant_output = false, near_zero_output = false;
  SetTolerances tolerances;  // task.json "strict_tolerance"; empty in bundles written before it
  // task.json "tolerance": the tiers the bundle was made with (python/kforge/bridge.py TOLERANCE), the one home of
  // the global tiers wherever a bundle is judged; kforge's defaults for bundles without it.
  Tolerance tolerance;
  TaskSpec spec() const { return {name(), graph, eager.median_ms, compile.median_ms}; }
  // Raw bytes of files in the bundle.
  MappedFile param_file(int i) const;
  MappedFile input_file(int set, int i) const;
  MappedFile output_file(int set, int j) const;
};

// Throws UserError naming the file and what is wrong.
Bundle load_bundle(const std::string& dir);
// Adds the sets `kforge draw-sets` wrote into `dir` (sets.json: fresh ones first, then beyond), with their strict
// tiers. Throws UserError naming what is wrong.
void add_drawn_sets(Bundle& b, const std::string& dir);
std::string read_file(const std::string& path);

}  // namespace kforge
