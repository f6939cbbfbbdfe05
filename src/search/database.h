// The measurement database (SQLite): every candidate ever measured, with its task, schedule, compile
// and verification results, times, reward, GPU and versions. Later runs read it to start from the best
// known schedule; learning (issue 5) trains on it.
#pragma once
#include <sqlite3.h>

#include <optional>
#include <string>

namespace kforge {

struct Measurement {
  std::string task, graph_hash, schedule_json, gpu, versions, log, protocol = "native";
  bool compiled = false, strict = false, relaxed = false;
  double median_ms = 0, mean_ms = 0, reward = -1, speedup_best = 0;
};

class MeasurementDB {
 public:
  explicit MeasurementDB(const std::string& path);  // creates the file and schema when absent
  ~MeasurementDB();
  MeasurementDB(const MeasurementDB&) = delete;
  MeasurementDB& operator=(const MeasurementDB&) = delete;

  int64_t record(const Measurement& m);
  // Fastest correct schedule measured for this graph on this GPU, if any.
  std::optional<Measurement> best(const std::string& graph_hash, const std::string& gpu);
  int64_t count(const std::string& graph_hash = "");

 private:
  void exec(const std::string& sql);
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace kforge
