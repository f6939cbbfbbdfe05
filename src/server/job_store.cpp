#include "server/job_store.h"

#include "ir/error.h"
#include "search/sqlite_db.h"

namespace kforge {

namespace {
using Stmt = SqlStatement;

constexpr const char* kJobColumns = "id, task_id, kind, payload, status, result, error, created, started, finished, artifact, owner";

Job read_job(Stmt& st) {
  Job j;
  j.id = sqlite3_column_int64(st.s, 0);
  j.task_id = sqlite3_column_int64(st.s, 1);
  j.kind = st.col_text(2);
  j.payload = st.col_text(3);
  j.status = st.col_text(4);
  j.result = st.col_text(5);
  j.error = st.col_text(6);
  j.created = st.col_text(7);
  j.started = st.col_text(8);
  j.finished = st.col_text(9);
  j.artifact = st.col_text(10);
  j.owner = st.col_text(11);
  return j;
}
}  // namespace

nlohmann::json Job::to_json() const {
  nlohmann::json j = {{"id", id}, {"task_id", task_id}, {"kind", kind}, {"status", status}, {"created", created},
                      {"started", started}, {"finished", finished}, {"error", error.empty() ? nlohmann::json() : nlohmann::json(error)}};
  j["result"] = result.empty() ? nlohmann::json() : nlohmann::json::parse(result, nullptr, false);
  return j;
}

JobStore::JobStore(const std::string& path) : path_(path) {
  db_ = open_sqlite(path, "job database");
  exec("CREATE TABLE IF NOT EXISTS tasks (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, bundle_dir TEXT, "
       "created TEXT DEFAULT (datetime('now')))");
  exec("CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, task_id INTEGER, kind TEXT, payload TEXT, "
       "status TEXT, result TEXT, error TEXT, created TEXT DEFAULT (datetime('now')), started TEXT, finished TEXT)");
  exec("CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs(status, id)");
  // Job databases from before the compile stage, or before owners, lack their columns.
  auto add_column = [&](const char* table, const char* column) {
    sqlite3_stmt* probe = nullptr;
    std::string select = std::string("SELECT ") + column + " FROM " + table + " LIMIT 0";
    if (sqlite3_prepare_v2(db_, select.c_str(), -1, &probe, nullptr) != SQLITE_OK)
      exec(std::string("ALTER TABLE ") + table + " ADD COLUMN " + column + " TEXT");
    sqlite3_finalize(probe);
  };
  add_column("jobs", "artifact");
  add_column("jobs", "owner");
  add_column("tasks", "owner");
  // A job that was compiling or running when the service died never finished: run it again (a built
  // candidate keeps its shared object).
  exec("UPDATE jobs SET status = CASE WHEN artifact IS NOT NULL AND artifact != '' THEN 'compiled' ELSE 'queued' END, "
       "started = NULL WHERE status IN ('running', 'compiling')");
  requeued_ = sqlite3_changes(db_);
}

JobStore::~JobStore() { sqlite3_close(db_); }

void JobStore::exec(const std::string& sql) { exec_sql(db_, sql, "job database " + path_); }

int64_t JobStore::add_task(const std::string& name, const std::string& bundle_dir, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "INSERT INTO tasks (name, bundle_dir, owner) VALUES (?, ?, ?)");
  st.text(1, name).text(2, bundle_dir).text(3, owner);
  sqlite3_step(st.s);
  return sqlite3_last_insert_rowid(db_);
}

std::optional<TaskRecord> JobStore::task(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "SELECT id, name, bundle_dir, COALESCE(owner, '') FROM tasks WHERE id = ?");
  st.integer(1, id);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  return TaskRecord{sqlite3_column_int64(st.s, 0), st.col_text(1), st.col_text(2), st.col_text(3)};
}

int64_t JobStore::submit(int64_t task_id, const std::string& kind, const std::string& payload, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "INSERT INTO jobs (task_id, kind, payload, status, owner) VALUES (?, ?, ?, 'queued', ?)");
  st.integer(1, task_id).text(2, kind).text(3, payload).text(4, owner);
  if (sqlite3_step(st.s) != SQLITE_DONE) throw UserError(std::string("job database insert failed: ") + sqlite3_errmsg(db_));
  return sqlite3_last_insert_rowid(db_);
}

std::optional<Job> JobStore::claim_where(const std::string& condition, const std::string& new_status) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "UPDATE jobs SET status = '" + new_status + "', started = COALESCE(started, datetime('now')) WHERE id = "
               "(SELECT id FROM jobs WHERE " + condition + " ORDER BY id LIMIT 1) RETURNING id");
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  int64_t id = sqlite3_column_int64(st.s, 0);
  Stmt get(db_, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?");
  get.integer(1, id);
  sqlite3_step(get.s);
  return read_job(get);
}

std::optional<Job> JobStore::claim(bool schedules) {
  return claim_where(std::string("(status = 'queued' AND kind != 'cuda'") + (schedules ? "" : " AND kind != 'schedule'") +
                         ") OR status = 'compiled'", "running");
}

std::optional<Job> JobStore::claim_compile() { return claim_where("status = 'queued' AND kind = 'cuda'", "compiling"); }

void JobStore::compiled(int64_t id, const std::string& artifact) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "UPDATE jobs SET status = 'compiled', artifact = ? WHERE id = ?");
  st.text(1, artifact).integer(2, id);
  sqlite3_step(st.s);
}

void JobStore::requeue(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "UPDATE jobs SET status = 'queued', artifact = NULL, started = NULL WHERE id = ?");
  st.integer(1, id);
  sqlite3_step(st.s);
}

void JobStore::finish(int64_t id, bool ok, const std::string& result_json, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "UPDATE jobs SET status = ?, result = ?, error = ?, finished = datetime('now') WHERE id = ?");
  st.text(1, ok ? "done" : "failed").text(2, result_json).text(3, error).integer(4, id);
  sqlite3_step(st.s);
}

std::optional<Job> JobStore::job(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?");
  st.integer(1, id);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  return read_job(st);
}

std::vector<Job> JobStore::list(const std::string& status, int limit, const std::optional<std::string>& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE 1" + (status.empty() ? "" : " AND status = ?") +
                    (owner ? " AND COALESCE(owner, '') = ?" : "") + " ORDER BY id DESC LIMIT ?";
  Stmt st(db_, sql);
  int i = 1;
  if (!status.empty()) st.text(i++, status);
  if (owner) st.text(i++, *owner);
  st.integer(i, limit);
  std::vector<Job> out;
  while (sqlite3_step(st.s) == SQLITE_ROW) out.push_back(read_job(st));
  return out;
}

int64_t JobStore::waiting(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'compiling', 'compiled') AND COALESCE(owner, '') = ?");
  st.text(1, owner);
  sqlite3_step(st.s);
  return sqlite3_column_int64(st.s, 0);
}

bool JobStore::cancel(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "UPDATE jobs SET status = 'cancelled', finished = datetime('now') WHERE id = ? AND status IN ('queued', 'compiled')");
  st.integer(1, id);
  sqlite3_step(st.s);
  return sqlite3_changes(db_) > 0;
}

int64_t JobStore::count(const std::string& status) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st(db_, "SELECT COUNT(*) FROM jobs WHERE status = ?");
  st.text(1, status);
  sqlite3_step(st.s);
  return sqlite3_column_int64(st.s, 0);
}

}  // namespace kforge
