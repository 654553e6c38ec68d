// PgStore: the leaderboard data lifecycle — deleting a user's data, finding users idle past the
// retention, expiring idempotency records.
//
// Deleted rows leave PostgreSQL's tables at once for every reader; their space (and the dead
// tuples' bytes) is reclaimed by (auto)vacuum, as for any PostgreSQL delete (docs/leaderboard.md).
#include <fmt/format.h>

#include "store/lifecycle_sql.h"
#include "store/memory_sql.h"
#include "store/pg_rows.h"
#include "store/pg_sql_txn.h"
#include "store/pg_store.h"

namespace engram {

namespace {

using pg::HasNul;

}  // namespace

Result<UserDeletion> PgStore::DeleteLeaderboardUser(std::string_view workspace,
                                                    std::string_view user_id) {
  UserDeletion out;
  if (HasNul(workspace) || HasNul(user_id)) return out;  // never stored
  const std::string scope = ScopeKeyMessages(workspace, user_id);
  Status st = pool_->Write([&](pqxx::work& t) -> Status {
    // First, as every writer of the scope does: waits for adds in flight and serialises with them.
    pg::BumpScopeVersion(t, scope);
    pg::PgTxn txn(t);
    Result<UserDeletion> deleted =
        lifecycle_sql::DeleteUser(txn, workspace, user_id, [&](SqlTxn& sql) -> Result<int64_t> {
          // The rows hold their vectors: they go with them.
          Result<std::optional<int64_t>> n = sql.QueryFirst<int64_t>(
              fmt::format("SELECT count(*) FROM memories WHERE {} AND vector IS NOT NULL",
                          memory_sql::kMessagesOfUser),
              {workspace, user_id}, [](const RowReader& r) { return r.Int(0); });
          if (!n.ok()) return n.status();
          return n->value_or(0);
        });
    if (!deleted.ok()) return deleted.status();
    out = *deleted;
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
  return lifecycle_sql::ExpireIdempotency([this](auto&& fn) { return Write(fn); }, before_s);
}

}  // namespace engram
