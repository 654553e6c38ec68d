#include "store/lifecycle_sql.h"

namespace engram::lifecycle_sql {

Result<std::vector<std::string>> IdleUsers(SqlTxn& txn, std::string_view workspace,
                                           int64_t before_us, size_t limit) {
  return txn.QueryAll<std::string>(
      "SELECT user_id FROM memories WHERE kind = 'message' AND workspace = $1 "
      "GROUP BY user_id HAVING max(created_at) < $2 LIMIT $3",
      {workspace, before_us, static_cast<int64_t>(limit)},
      [](const RowReader& r) { return r.Text(0); });
}

Result<int64_t> ExpireIdempotencyChunk(SqlTxn& txn, int64_t before_s) {
  return txn.Exec(
      "DELETE FROM idempotency WHERE (user_id, key) IN (SELECT user_id, key FROM idempotency "
      "WHERE created_at < $1 LIMIT $2)",
      {before_s, kExpireChunk});
}

}  // namespace engram::lifecycle_sql
