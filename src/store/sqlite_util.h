// Thin RAII helpers over the SQLite C API, used only inside store/.
// Thread-safety: a Db or Stmt must be used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/row_reader.h"

namespace engram::sqlite {

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_), prepare_rc_(o.prepare_rc_) {
    o.stmt_ = nullptr;
  }

  bool valid() const { return stmt_ != nullptr; }
  Status prepare_status() const;

  void Reset();
  void Bind(int i, std::string_view v);
  void BindBlob(int i, std::string_view v);
  void Bind(int i, int64_t v);
  void BindNull(int i);
  void Bind(int i, const std::optional<int64_t>& v);

  // Steps once: true when a row is available, false when done; errors go to `status`.
  bool Step(Status* status);
  Status Exec();  // steps to completion, expecting no rows

  std::string ColumnText(int i) const;
  std::string ColumnBlob(int i) const;
  int64_t ColumnInt(int i) const;
  bool ColumnIsNull(int i) const;

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  int prepare_rc_ = SQLITE_OK;
};

// The current row of a stepped statement, as a RowReader.
class StmtRow final : public RowReader {
 public:
  explicit StmtRow(const Stmt& stmt) : stmt_(stmt) {}
  bool IsNull(int i) const override { return stmt_.ColumnIsNull(i); }
  std::string Text(int i) const override { return stmt_.ColumnText(i); }
  int64_t Int(int i) const override { return stmt_.ColumnInt(i); }
  std::string Bytes(int i) const override { return stmt_.ColumnBlob(i); }
  std::vector<float> Vector(int i) const override;

 private:
  const Stmt& stmt_;
};

// Runs one or more statements without results.
Status ExecScript(sqlite3* db, const char* sql);

// A Status from an SQLite result code and the connection's message.
Status ErrorStatus(sqlite3* db, int rc, std::string_view what);

// The VFS name sqlite3_open_v2 takes for `name`: null (SQLite's default) when it is empty.
inline const char* VfsName(const std::string& name) {
  return name.empty() ? nullptr : name.c_str();
}

// The connection's last error was SQLITE_FULL (SQLite reports ENOSPC and EDQUOT so).
bool LastErrorIsFull(sqlite3* db);

// Space probes for the database's directory (not SQLite's, but what its writes need).
// Free bytes for an unprivileged writer (statvfs), or -1 when unknown.
int64_t FreeBytes(const std::string& dir);
// Writes, syncs and deletes a `bytes`-long file in `dir`: kUnavailable when there is no room.
Status ProbeFreeSpace(const std::string& dir, size_t bytes);

}  // namespace engram::sqlite
