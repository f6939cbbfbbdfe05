#include "env/bundle.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace kforge {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Stats stats_from_json(const nlohmann::json& j) {
  Stats s;
  if (!j.is_object()) return s;
  s.mean_ms = j.value("mean_ms", 0.0);
  s.median_ms = j.value("median_ms", 0.0);
  s.min_ms = j.value("min_ms", 0.0);
  s.std_ms = j.value("std_ms", 0.0);
  s.trials = j.value("trials", 0);
  return s;
}

nlohmann::json to_json(const Stats& s) {
  return {{"mean_ms", s.mean_ms}, {"median_ms", s.median_ms}, {"min_ms", s.min_ms}, {"std_ms", s.std_ms}, {"trials", s.trials}};
}

namespace {
std::string sized(const std::string& path, int64_t want) {
  std::string b = read_file(path);
  if (int64_t(b.size()) != want)
    throw UserError(path + " holds " + std::to_string(b.size()) + " bytes, the graph says " + std::to_string(want));
  return b;
}
}  // namespace

std::string Bundle::param_bytes(int i) const {
  return sized(dir + "/params/" + std::to_string(i) + ".bin", nbytes(graph.at(graph.params.at(i)).type));
}
std::string Bundle::input_bytes(int set, int i) const {
  return sized(dir + "/sets/" + std::to_string(set) + "/in" + std::to_string(i) + ".bin", nbytes(graph.at(graph.inputs.at(i)).type));
}
std::string Bundle::output_bytes(int set, int j) const {
  return sized(dir + "/sets/" + std::to_string(set) + "/out" + std::to_string(j) + ".bin", nbytes(graph.at(graph.outputs.at(j)).type));
}

Bundle load_bundle(const std::string& dir) {
  Bundle b;
  b.dir = dir;
  std::string path = dir + "/task.json";
  if (!fs::exists(path)) throw UserError(dir + " is not a task bundle: it has no task.json (run `kforge import` first)");
  try {
    b.task = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + " is not valid JSON: " + e.what());
  }
  if (!b.task.contains("graph")) throw UserError(path + " has no 'graph'");
  try {
    b.graph = graph_from_json(b.task["graph"]);
  } catch (const UserError& e) {
    throw UserError(path + ": " + e.what());
  }
  // Baselines are null when the import did not time them (CPU imports, --no-baselines).
  const nlohmann::json& base = b.task.contains("baselines") ? b.task["baselines"] : nlohmann::json();
  if (base.is_object()) {
    b.eager = stats_from_json(base.value("eager", nlohmann::json()));
    b.compile = stats_from_json(base.value("compile", nlohmann::json()));
  }
  auto flags = b.task.value("flags", nlohmann::json::object());
  b.constant_output = flags.value("constant_output", false);
  b.near_zero_output = flags.value("near_zero_output", false);
  if (b.num_sets() < 1) throw UserError(path + " lists no input sets");
  return b;
}

}  // namespace kforge
