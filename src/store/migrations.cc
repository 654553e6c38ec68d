#include "store/migrations.h"

#include <fmt/format.h>

#include "store/sqlite_util.h"

namespace engram {

Result<int> ApplyMigrations(sqlite3* db, const std::vector<Migration>& migrations) {
  sqlite::Stmt q(db, "PRAGMA user_version");
  ENGRAM_RETURN_IF_ERROR(q.prepare_status());
  Status st;
  int current = q.Step(&st) ? static_cast<int>(q.ColumnInt(0)) : 0;
  ENGRAM_RETURN_IF_ERROR(st);
  q.Reset();
  int latest = migrations.empty() ? 0 : migrations.back().version;
  if (current > latest) {
    return Status::Unavailable(fmt::format(
        "database schema version {} is newer than this binary supports ({})", current, latest));
  }
  for (const Migration& m : migrations) {
    if (m.version <= current) continue;
    ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(db, "BEGIN IMMEDIATE"));
    Status applied = sqlite::ExecScript(db, m.sql);
    if (applied.ok()) {
      applied = sqlite::ExecScript(db, fmt::format("PRAGMA user_version = {}", m.version).c_str());
    }
    if (!applied.ok()) {
      (void)sqlite::ExecScript(db, "ROLLBACK");
      return Status(applied.code(), fmt::format("migration {}: {}", m.name, applied.message()));
    }
    ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(db, "COMMIT"));
    current = m.version;
  }
  return current;
}

}  // namespace engram
