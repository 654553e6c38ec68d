// SqliteTxn: the SQL store core's statements (sql_txn.h) run on one SQLite connection, inside
// whatever transaction its caller holds (the writer's group commit, a reader's snapshot).
// Internal to store/.
//
// Thread-safety: used by the thread that holds the connection. Ownership: borrows the connection.
#pragma once

#include <sqlite3.h>

#include "store/sql_txn.h"

namespace engram::sqlite {

class SqliteTxn final : public SqlTxn {
 public:
  explicit SqliteTxn(sqlite3* db) : db_(db) {}

  Result<int64_t> Exec(std::string_view sql, const SqlParams& params) override;
  Status Query(std::string_view sql, const SqlParams& params,
               const std::function<void(const RowReader&)>& row) override;
  std::string_view ByteCollation() const override { return "COLLATE BINARY"; }
  std::string_view PositionFunction() const override { return "instr"; }

 private:
  sqlite3* db_;
};

}  // namespace engram::sqlite
