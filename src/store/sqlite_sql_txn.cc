#include "store/sqlite_sql_txn.h"

#include "store/sqlite_util.h"

namespace engram::sqlite {

namespace {

Status Prepare(Stmt& stmt, const SqlParams& params) {
  ENGRAM_RETURN_IF_ERROR(stmt.prepare_status());
  for (size_t i = 0; i < params.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    const SqlValue& v = params[i];
    switch (v.kind()) {
      case SqlValue::Kind::kNull:
        stmt.BindNull(index);
        break;
      case SqlValue::Kind::kInt:
        stmt.Bind(index, v.int_value());
        break;
      case SqlValue::Kind::kText:
        stmt.Bind(index, std::string_view(v.text()));
        break;
      case SqlValue::Kind::kBytes:
        stmt.BindBlob(index, v.text());
        break;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> SqliteTxn::Exec(std::string_view sql, const SqlParams& params) {
  Stmt stmt(db_, RenderForSqlite(sql));
  ENGRAM_RETURN_IF_ERROR(Prepare(stmt, params));
  ENGRAM_RETURN_IF_ERROR(stmt.Exec());
  return static_cast<int64_t>(sqlite3_changes(db_));
}

Status SqliteTxn::Query(std::string_view sql, const SqlParams& params,
                        const std::function<void(const RowReader&)>& row) {
  Stmt stmt(db_, RenderForSqlite(sql));
  ENGRAM_RETURN_IF_ERROR(Prepare(stmt, params));
  Status st;
  while (stmt.Step(&st)) row(StmtRow(stmt));
  return st;
}

}  // namespace engram::sqlite
