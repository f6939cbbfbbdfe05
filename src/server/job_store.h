// The service's durable state (SQLite): registered tasks and submitted jobs with their status and
// results. A job is claimed by moving it from `queued` to `running` in one statement, so two workers never
// take the same job; on open, jobs a crashed service left `running` go back to `queued`: a restart loses
// none.
#pragma once
#include <sqlite3.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

struct Job {
  int64_t id = 0, task_id = 0;
  std::string kind, payload, status, result, error, created, started, finished;
  nlohmann::json to_json() const;
};

struct TaskRecord {
  int64_t id = 0;
  std::string name, bundle_dir;
};

class JobStore {
 public:
  explicit JobStore(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  int64_t add_task(const std::string& name, const std::string& bundle_dir);
  std::optional<TaskRecord> task(int64_t id);
  int64_t submit(int64_t task_id, const std::string& kind, const std::string& payload);
  std::optional<Job> claim();  // oldest queued job, now running
  void finish(int64_t id, bool ok, const std::string& result_json, const std::string& error);
  std::optional<Job> job(int64_t id);
  std::vector<Job> list(const std::string& status, int limit);
  int64_t count(const std::string& status);
  int64_t requeued_on_open() const { return requeued_; }

 private:
  void exec(const std::string& sql);
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  std::string path_;
  int64_t requeued_ = 0;
};

}  // namespace kforge
