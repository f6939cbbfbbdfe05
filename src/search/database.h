// The measurement database (SQLite): every candidate ever measured, with its task, schedule, compile
// and verification results, times, reward, GPU and versions. Later runs read it to start from the best
// known schedule; learning (issue 5) trains on it.
#pragma once
#include <sqlite3.h>

#include <optional>
#include <vector>
#include <string>

namespace kforge {

struct Measurement {
  std::string task, graph_hash, schedule_json, gpu, versions = {}, log = {}, protocol = "native";
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
  // The graph behind a hash, so that features can be computed from measurements later.
  void record_task(const std::string& graph_hash, const std::string& name, const std::string& graph_json);
  struct TrainingRow {
    std::string graph_hash, graph_json, schedule_json;
    double median_ms = 0, reward = 0;
    std::string gpu;
  };
  // Every correct measurement whose task graph is known, for the cost model.
  std::vector<TrainingRow> training_rows(const std::string& gpu = "");

 private:
  void exec(const std::string& sql);
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace kforge
