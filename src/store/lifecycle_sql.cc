#include "store/lifecycle_sql.h"

#include <fmt/format.h>

#include <set>

#include "store/memory_sql.h"
#include "store/parts_refs.h"

namespace engram::lifecycle_sql {

Result<UserDeletion> DeleteUser(SqlTxn& txn, std::string_view workspace, std::string_view user_id,
                                const std::function<Result<int64_t>(SqlTxn&)>& drop_vectors) {
  UserDeletion out;
  const SqlParams scope = {workspace, user_id};
  std::set<std::string> hashes;
  ENGRAM_RETURN_IF_ERROR(
      txn.Query(fmt::format("SELECT parts FROM memories WHERE {} AND parts IS NOT NULL",
                            memory_sql::kMessagesOfUser),
                scope, [&](const RowReader& r) { CollectImageHashes(r.Text(0), &hashes); }));
  Result<int64_t> vectors = drop_vectors(txn);
  if (!vectors.ok()) return vectors.status();
  out.vectors = *vectors;
  Result<int64_t> messages =
      txn.Exec(fmt::format("DELETE FROM memories WHERE {}", memory_sql::kMessagesOfUser), scope);
  if (!messages.ok()) return messages.status();
  out.messages = *messages;
  // An image is stored once for every message that shows it: it stays while any remains.
  const std::string drop_image = fmt::format(
      "DELETE FROM images WHERE sha256 = $1 AND NOT EXISTS (SELECT 1 FROM memories "
      "WHERE parts IS NOT NULL AND {}(parts, $1) > 0)",
      txn.PositionFunction());
  for (const std::string& hash : hashes) {
    Result<int64_t> n = txn.Exec(drop_image, {hash});
    if (!n.ok()) return n.status();
    out.images += *n;
  }
  Result<int64_t> idempotency = txn.Exec("DELETE FROM idempotency WHERE user_id = $1", {user_id});
  if (!idempotency.ok()) return idempotency.status();
  out.idempotency = *idempotency;
  return out;
}

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
