#include "env/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
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

MappedFile::MappedFile(const std::string& path, int64_t expected_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError("cannot read " + path + ": " + strerror(errno));
  struct stat st {};
  fstat(fd, &st);
  if (int64_t(st.st_size) != expected_bytes) {
    close(fd);
    throw UserError(path + " holds " + std::to_string(st.st_size) + " bytes, the graph says " + std::to_string(expected_bytes));
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    data_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      close(fd);
      throw UserError("cannot map " + path + ": " + strerror(errno));
    }
  }
  close(fd);
}

MappedFile::~MappedFile() {
  if (data_) munmap(data_, size_);
}

MappedFile Bundle::param_file(int i) const {
  return {dir + "/params/" + std::to_string(i) + ".bin", nbytes(graph.at(graph.params.at(i)).type)};
}
namespace {
// A bundle or a draw is plain files: a symbolic link inside would have a process that runs as root (staging what
// a sandboxed candidate is shown, env/sandbox.cpp) read wherever it points.
void refuse_links(const std::string& dir, const std::string& what) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_symlink()) throw UserError(what + " " + dir + " holds a symbolic link (" + it->path().string() + "): refused");
  if (ec) throw UserError("cannot read " + what + " " + dir + ": " + ec.message());
}
}  // namespace

int Bundle::declared_sets() const {
  int n = stored_sets();
  for (const DrawnSet& d : drawn) n += d.beyond ? 0 : 1;
  return n;
}
std::string Bundle::set_dir(int set) const {
  if (set >= stored_sets()) return drawn.at(size_t(set - stored_sets())).dir;
  return dir + "/sets/" + std::to_string(set);
}
MappedFile Bundle::input_file(int set, int i) const {
  return {set_dir(set) + "/in" + std::to_string(i) + ".bin", nbytes(graph.at(graph.inputs.at(i)).type)};
}
MappedFile Bundle::output_file(int set, int j) const {
  return {set_dir(set) + "/out" + std::to_string(j) + ".bin", nbytes(graph.at(graph.outputs.at(j)).type)};
}

void add_drawn_sets(Bundle& b, const std::string& dir) {
  std::string path = dir + "/sets.json";
  refuse_links(dir, "drawn sets");
  nlohmann::json listing;
  try {
    listing = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + " is not valid JSON: " + e.what());
  }
  const int outputs = int(b.graph.outputs.size());
  const Tolerance& global = b.tolerance;
  std::vector<std::vector<double>> strict = b.tolerances.rows(b.num_sets(), outputs, global);
  std::vector<DrawnSet> fresh, beyond;
  std::vector<std::vector<double>> fresh_strict, beyond_strict;
  try {
    for (const auto& s : listing.at("sets")) {
      std::string name = s.at("dir").get<std::string>();
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        throw UserError(path + ": a set's folder is a plain name inside " + dir + ", not '" + name + "'");
      DrawnSet d{dir + "/" + name, s.value("beyond", false), s.value("how", std::string())};
      (d.beyond ? beyond : fresh).push_back(d);
      (d.beyond ? beyond_strict : fresh_strict).push_back(s.at("strict").get<std::vector<double>>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + ": each of 'sets' needs 'dir' and 'strict' (one number per output): " + e.what());
  }
  if (fresh.empty()) throw UserError(path + " holds no fresh set (draw at least one)");
  for (auto* group : {&fresh, &beyond}) b.drawn.insert(b.drawn.end(), group->begin(), group->end());
  for (auto* group : {&fresh_strict, &beyond_strict}) strict.insert(strict.end(), group->begin(), group->end());
  try {
    b.tolerances = SetTolerances(std::move(strict), b.num_sets(), outputs, global);
  } catch (const UserError& e) {
    throw UserError(path + ": " + e.what());
  }
  for (int s = b.stored_sets(); s < b.num_sets(); ++s)  // every file there and of the graph's size, before any upload
    for (size_t i = 0; i < b.graph.inputs.size(); ++i) b.input_file(s, int(i));
}


Bundle load_bundle(const std::string& dir) {
  Bundle b;
  b.dir = dir;
  std::string path = dir + "/task.json";
  if (!fs::exists(path)) throw UserError(dir + " is not a task bundle: it has no task.json (run `kforge import` first)");
  refuse_links(dir, "bundle");
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
  if (b.task.contains("tolerance")) {
    const nlohmann::json& t = b.task["tolerance"];
    double strict = t.is_object() ? t.value("strict", -1.0) : -1.0, relaxed = t.is_object() ? t.value("relaxed", -1.0) : -1.0;
    if (!(strict > 0 && relaxed >= strict && relaxed < 1))
      throw UserError(path + ": 'tolerance' must be {\"strict\": s, \"relaxed\": r} with 0 < s <= r < 1, got " + t.dump());
    b.tolerance = {strict, relaxed};
  }
  if (b.task.contains("strict_tolerance")) {
    try {
      b.tolerances = SetTolerances(b.task["strict_tolerance"].get<std::vector<std::vector<double>>>(), b.num_sets(),
                                   int(b.graph.outputs.size()), b.tolerance);
    } catch (const nlohmann::json::exception& e) {
      throw UserError(path + ": 'strict_tolerance' must be a list (one per input set) of lists of numbers (one per output): " +
                      e.what());
    } catch (const UserError& e) {
      throw UserError(path + ": 'strict_tolerance': " + e.what());
    }
  }
  return b;
}

}  // namespace kforge
