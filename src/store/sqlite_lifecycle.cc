// SqliteStore: the leaderboard data lifecycle — deleting a user's data so that no readable copy
// stays in the data directory, finding users idle past the retention, expiring idempotency records.
//
// No readable copy: the writer connection runs with secure_delete on (set at open), so SQLite
// overwrites deleted rows and freed pages with zeros; those zeroed pages go through the WAL, and
// the old frames that still hold the text are removed by truncating the WAL (a TRUNCATE checkpoint)
// before the deletion is answered. Leaderboard adds never go through the intake journal (only
// memory events do), so there is nothing to remove there.
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "store/lifecycle_sql.h"
#include "store/memory_sql.h"
#include "store/sqlite_store.h"
#include "store/sqlite_util.h"

namespace engram {

namespace {

// How long a deletion keeps trying to truncate the WAL while readers or a background checkpoint
// hold it (each try also waits in SQLite's busy handler).
constexpr int kTruncateAttempts = 100;
constexpr auto kTruncateRetryDelay = std::chrono::milliseconds(20);

}  // namespace

Result<UserDeletion> SqliteStore::DeleteLeaderboardUser(std::string_view workspace,
                                                        std::string_view user_id) {
  UserDeletion out;
  Status st = Write([&](SqlTxn& txn) -> Status {
    Result<UserDeletion> deleted =
        lifecycle_sql::DeleteUser(txn, workspace, user_id, [&](SqlTxn& sql) {
          // Vectors live in a table of their own.
          return sql.Exec(fmt::format("DELETE FROM memory_vectors WHERE memory_seq IN "
                                      "(SELECT seq FROM memories WHERE {})",
                                      memory_sql::kMessagesOfUser),
                          {workspace, user_id});
        });
    if (!deleted.ok()) return deleted.status();
    out = *deleted;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  // Also after a deletion that found nothing: a repeated call finishes a truncation that an
  // earlier one could not complete.
  ENGRAM_RETURN_IF_ERROR(TruncateWal());
  return out;
}

Status SqliteStore::TruncateWal() {
  // Its own short-lived connection: the writer's is busy with transactions, and a checkpoint must
  // run outside one.
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(options_.path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      sqlite::VfsName(options_.vfs));
  if (rc != SQLITE_OK) {
    Status st = sqlite::ErrorStatus(db, rc, "open for WAL truncation");
    sqlite3_close(db);
    return st;
  }
  sqlite3_busy_timeout(db, 1000);
  Status result = Status::Unavailable(
      "the data was deleted but the write-ahead log is still in use; repeat the request to remove "
      "its old copy");
  for (int attempt = 0; attempt < kTruncateAttempts; ++attempt) {
    // The pragma, not sqlite3_wal_checkpoint_v2: a fresh connection has not read the database
    // yet and would not know it is in WAL mode (the call would do nothing and report success).
    // Its first column is 1 when the checkpoint could not finish (readers or another one).
    sqlite::Stmt q(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    Status st = q.prepare_status();
    bool busy = true;
    if (st.ok() && q.Step(&st)) busy = q.ColumnInt(0) != 0;
    if (!st.ok() && st.code() != StatusCode::kUnavailable) {
      result = st;
      break;
    }
    if (st.ok() && !busy) {
      result = Status::Ok();
      break;
    }
    std::this_thread::sleep_for(kTruncateRetryDelay);
  }
  sqlite3_close(db);
  return result;
}

Result<std::vector<std::string>> SqliteStore::LeaderboardUsersIdleSince(std::string_view workspace,
                                                                        int64_t before_us,
                                                                        size_t limit) {
  return Read(
      [&](SqlTxn& txn) { return lifecycle_sql::IdleUsers(txn, workspace, before_us, limit); });
}

Result<int64_t> SqliteStore::ExpireIdempotency(int64_t before_s) {
  return lifecycle_sql::ExpireIdempotency([this](auto&& fn) { return Write(fn); }, before_s);
}

}  // namespace engram
