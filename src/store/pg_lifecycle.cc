// PgStore: the leaderboard data lifecycle — deleting a user's data, finding users idle past the
// retention, expiring idempotency records.
//
// Deleted rows leave PostgreSQL's tables at once for every reader; their space (and the dead
// tuples' bytes) is reclaimed by (auto)vacuum, as for any PostgreSQL delete (docs/leaderboard.md).
#include <fmt/format.h>

#include <set>

#include "store/lifecycle_sql.h"
#include "store/parts_refs.h"
#include "store/pg_rows.h"
#include "store/pg_store.h"

namespace engram {

namespace {

using pg::HasNul;

}  // namespace

Result<UserDeletion> PgStore::DeleteLeaderboardUser(std::string_view workspace,
                                                    std::string_view user_id) {
  UserDeletion out;
  if (HasNul(workspace) || HasNul(user_id)) return out;  // never stored
  const std::string ws(workspace);
  const std::string user(user_id);
  const std::string scope = ScopeKeyMessages(workspace, user_id);
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    out = {};
    // First, as every writer of the scope does: waits for adds in flight and serialises with them.
    pg::BumpScopeVersion(txn, scope);
    auto rows = txn.exec_params(
        "DELETE FROM memories WHERE kind = 'message' AND workspace = $1 AND user_id = $2 "
        "RETURNING parts, vector IS NOT NULL",
        ws, user);
    std::set<std::string> hashes;
    for (const auto& r : rows) {
      ++out.messages;
      if (!r[0].is_null()) CollectImageHashes(r[0].as<std::string>(), &hashes);
      if (r[1].as<bool>()) ++out.vectors;
    }
    for (const auto& hash : hashes) {
      // An image is stored once for every message that shows it: keep it while any remains.
      auto deleted = txn.exec_params(
          "DELETE FROM images WHERE sha256 = $1 AND NOT EXISTS (SELECT 1 FROM memories "
          "WHERE parts IS NOT NULL AND strpos(parts, $1) > 0)",
          hash);
      out.images += deleted.affected_rows();
    }
    out.idempotency =
        txn.exec_params("DELETE FROM idempotency WHERE user_id = $1", user).affected_rows();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<std::string>> PgStore::LeaderboardUsersIdleSince(std::string_view workspace,
                                                                    int64_t before_us,
                                                                    size_t limit) {
  if (HasNul(workspace)) return std::vector<std::string>{};  // never stored
  return Read(
      [&](SqlTxn& txn) { return lifecycle_sql::IdleUsers(txn, workspace, before_us, limit); });
}

Result<int64_t> PgStore::ExpireIdempotency(int64_t before_s) {
  int64_t total = 0;
  for (;;) {
    int64_t deleted = 0;
    ENGRAM_RETURN_IF_ERROR(pool_->Write([&](pqxx::work& t) -> Status {
      pg::PgTxn txn(t);
      Result<int64_t> n = lifecycle_sql::ExpireIdempotencyChunk(txn, before_s);
      if (!n.ok()) return n.status();
      deleted = *n;
      return Status::Ok();
    }));
    total += deleted;
    if (deleted < lifecycle_sql::kExpireChunk) return total;
  }
}

}  // namespace engram
