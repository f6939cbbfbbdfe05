#include "search/database.h"

#include "ir/error.h"
#include "search/sqlite_db.h"

namespace kforge {

using Stmt = SqlStatement;

MeasurementDB::MeasurementDB(const std::string& path) : path_(path) {
  db_ = open_sqlite(path, "measurement database");
  exec(R"SQL(CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT DEFAULT (datetime('now')),
    task TEXT NOT NULL, graph_hash TEXT NOT NULL, schedule TEXT NOT NULL,
    compiled INTEGER, strict INTEGER, relaxed INTEGER,
    protocol TEXT, median_ms REAL, mean_ms REAL, reward REAL, speedup_best REAL,
    gpu TEXT, versions TEXT, log TEXT))SQL");
  exec("CREATE INDEX IF NOT EXISTS by_graph ON measurements(graph_hash, gpu)");
  exec("CREATE TABLE IF NOT EXISTS tasks (graph_hash TEXT PRIMARY KEY, name TEXT, graph TEXT)");
}

MeasurementDB::~MeasurementDB() { sqlite3_close(db_); }

void MeasurementDB::exec(const std::string& sql) { exec_sql(db_, sql, "measurement database " + path_); }

int64_t MeasurementDB::record(const Measurement& m) {
  Stmt st(db_, "INSERT INTO measurements (task, graph_hash, schedule, compiled, strict, relaxed, protocol, median_ms, "
               "mean_ms, reward, speedup_best, gpu, versions, log) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.text(1, m.task);
  st.text(2, m.graph_hash);
  st.text(3, m.schedule_json);
  st.integer(4, m.compiled);
  st.integer(5, m.strict);
  st.integer(6, m.relaxed);
  st.text(7, m.protocol);
  st.real(8, m.median_ms);
  st.real(9, m.mean_ms);
  st.real(10, m.reward);
  st.real(11, m.speedup_best);
  st.text(12, m.gpu);
  st.text(13, m.versions);
  st.text(14, m.log.substr(0, 20000));
  if (sqlite3_step(st.s) != SQLITE_DONE) throw UserError(std::string("measurement database insert failed: ") + sqlite3_errmsg(db_));
  return sqlite3_last_insert_rowid(db_);
}

std::optional<Measurement> MeasurementDB::best(const std::string& graph_hash, const std::string& gpu) {
  Stmt st(db_, "SELECT task, schedule, median_ms, mean_ms, reward, strict, speedup_best FROM measurements "
               "WHERE graph_hash = ? AND gpu = ? AND relaxed = 1 ORDER BY median_ms ASC LIMIT 1");
  st.text(1, graph_hash);
  st.text(2, gpu);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  Measurement m;
  m.task = st.col_text(0);
  m.graph_hash = graph_hash;
  m.schedule_json = st.col_text(1);
  m.median_ms = sqlite3_column_double(st.s, 2);
  m.mean_ms = sqlite3_column_double(st.s, 3);
  m.reward = sqlite3_column_double(st.s, 4);
  m.strict = sqlite3_column_int(st.s, 5);
  m.relaxed = true;
  m.compiled = true;
  m.speedup_best = sqlite3_column_double(st.s, 6);
  m.gpu = gpu;
  return m;
}

void MeasurementDB::record_task(const std::string& graph_hash, const std::string& name, const std::string& graph_json) {
  Stmt st(db_, "INSERT OR IGNORE INTO tasks (graph_hash, name, graph) VALUES (?, ?, ?)");
  st.text(1, graph_hash);
  st.text(2, name);
  st.text(3, graph_json);
  if (sqlite3_step(st.s) != SQLITE_DONE) throw UserError(std::string("measurement database insert failed: ") + sqlite3_errmsg(db_));
}

std::vector<MeasurementDB::TrainingRow> MeasurementDB::training_rows(const std::string& gpu) {
  Stmt st(db_, "SELECT m.graph_hash, t.graph, m.schedule, m.median_ms, m.reward, m.gpu FROM measurements m JOIN tasks t ON "
               "m.graph_hash = t.graph_hash WHERE m.relaxed = 1 AND m.median_ms > 0 AND (? = '' OR m.gpu = ?) ORDER BY m.id");
  st.text(1, gpu);
  st.text(2, gpu);
  std::vector<TrainingRow> rows;
  while (sqlite3_step(st.s) == SQLITE_ROW)
    rows.push_back({st.col_text(0), st.col_text(1), st.col_text(2), sqlite3_column_double(st.s, 3),
                    sqlite3_column_double(st.s, 4), st.col_text(5)});
  return rows;
}

int64_t MeasurementDB::count(const std::string& graph_hash) {
  Stmt st(db_, graph_hash.empty() ? "SELECT COUNT(*) FROM measurements" : "SELECT COUNT(*) FROM measurements WHERE graph_hash = ?");
  if (!graph_hash.empty()) st.text(1, graph_hash);
  sqlite3_step(st.s);
  return sqlite3_column_int64(st.s, 0);
}

}  // namespace kforge
