#include "store/job_sql.h"

#include <fmt/format.h>

#include "store/row_bounds.h"

namespace engram::job_sql {

Status NewestFirst(SqlTxn& txn, std::string_view table, std::string_view columns,
                   std::string_view workspace, size_t offset, size_t limit, size_t* total,
                   const std::function<void(const RowReader&)>& row) {
  *total = 0;
  Result<std::optional<int64_t>> count =
      txn.QueryFirst<int64_t>(fmt::format("SELECT count(*) FROM {} WHERE workspace = $1", table),
                              {workspace}, [](const RowReader& r) { return r.Int(0); });
  if (!count.ok()) return count.status();
  if (!count->has_value()) return Status::Internal("count returned no row");
  *total = static_cast<size_t>(**count);
  return txn.Query(fmt::format("SELECT {} FROM {} WHERE workspace = $1 "
                               "ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3",
                               columns, table),
                   {workspace, SqlRowBound(limit), SqlRowBound(offset)}, row);
}

}  // namespace engram::job_sql
