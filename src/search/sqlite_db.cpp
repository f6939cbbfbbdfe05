#include "search/sqlite_db.h"

#include "ir/error.h"

namespace kforge {

sqlite3* open_sqlite(const std::string& path, const std::string& what) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string e = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw UserError("cannot open " + what + " " + path + ": " + e);
  }
  sqlite3_busy_timeout(db, 10000);  // several kforge processes may share one database
  exec_sql(db, "PRAGMA journal_mode=WAL", what + " " + path);
  return db;
}

void exec_sql(sqlite3* db, const std::string& sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string e = err ? err : "unknown";
    sqlite3_free(err);
    throw UserError(what + ": " + e);
  }
}

SqlStatement::SqlStatement(sqlite3* db, const std::string& sql) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
    throw InternalError(std::string("sqlite prepare failed: ") + sqlite3_errmsg(db) + " in: " + sql);
}

}  // namespace kforge
