// The few SQLite pieces the measurement database and the service's job store share: opening a database that
// several processes may write (busy timeout, WAL), running a statement, and a prepared statement that
// finalizes itself. Errors name the database and the cause.
#pragma once
#include <sqlite3.h>

#include <string>

namespace kforge {

// Opens (creating) `path`; `what` names it in errors ("measurement database").
sqlite3* open_sqlite(const std::string& path, const std::string& what);
void exec_sql(sqlite3* db, const std::string& sql, const std::string& what);

class SqlStatement {
 public:
  SqlStatement(sqlite3* db, const std::string& sql);
  ~SqlStatement() { sqlite3_finalize(s); }
  SqlStatement(const SqlStatement&) = delete;
  SqlStatement& operator=(const SqlStatement&) = delete;
  SqlStatement& text(int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  SqlStatement& real(int i, double v) {
    sqlite3_bind_double(s, i, v);
    return *this;
  }
  SqlStatement& integer(int i, int64_t v) {
    sqlite3_bind_int64(s, i, v);
    return *this;
  }
  std::string col_text(int i) {
    auto* p = sqlite3_column_text(s, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  sqlite3_stmt* s = nullptr;
};

}  // namespace kforge
