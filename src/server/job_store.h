// The service's durable state (SQLite): registered tasks and submitted jobs with their status and
// results. A job's life: queued -> running -> done | failed (or cancelled before it runs); a raw CUDA job (kind "cuda") is first built on
// the CPU: queued -> compiling -> compiled (its shared object in `artifact`) -> running. A job is claimed by
// moving it to its next status in one statement, so two workers never take the same job; on open, jobs a
// crashed service left `compiling` or `running` go back to `queued` (or to `compiled`, when built): a
// restart loses none.
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
  std::string kind, payload, status, result, error, created, started, finished, artifact;
  std::string owner;  // the token's name that submitted it ("" without authentication)
  nlohmann::json to_json() const;
};

struct TaskRecord {
  int64_t id = 0;
  std::string name, bundle_dir;
  std::string owner;
};

class JobStore {
 public:
  explicit JobStore(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  int64_t add_task(const std::string& name, const std::string& bundle_dir, const std::string& owner = "");
  std::optional<TaskRecord> task(int64_t id);
  int64_t submit(int64_t task_id, const std::string& kind, const std::string& payload, const std::string& owner = "");
  // Oldest job ready for the GPU (queued, or compiled), now running; schedules only when `schedules`.
  std::optional<Job> claim(bool schedules = true);
  std::optional<Job> claim_compile();  // oldest queued raw CUDA job, now compiling
  void compiled(int64_t id, const std::string& artifact);
  void requeue(int64_t id);            // back to queued, artifact dropped (it went missing)
  void finish(int64_t id, bool ok, const std::string& result_json, const std::string& error);
  std::optional<Job> job(int64_t id);
  // Recent jobs; `owner` set: only that owner's.
  std::vector<Job> list(const std::string& status, int limit, const std::optional<std::string>& owner = std::nullopt);
  int64_t count(const std::string& status);
  int64_t waiting(const std::string& owner);  // queued, compiling or compiled jobs of one owner
  // A job not yet running becomes "cancelled"; false where it is running or finished.
  bool cancel(int64_t id);
  int64_t requeued_on_open() const { return requeued_; }

 private:
  void exec(const std::string& sql);
  std::optional<Job> claim_where(const std::string& condition, const std::string& new_status);
  std::mutex mu_;
  sqlite3* db_ = nullptr;
  std::string path_;
  int64_t requeued_ = 0;
};

}  // namespace kforge
