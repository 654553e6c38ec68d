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
#include <set>
#include <thread>

#include "store/lifecycle_sql.h"
#include "store/parts_refs.h"
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
  Status st = Submit([&](sqlite3* db) -> Status {
    out = {};
    std::set<std::string> hashes;
    {
      sqlite::Stmt q(db,
                     "SELECT parts FROM memories WHERE kind = 'message' AND workspace = ? AND "
                     "user_id = ? AND parts IS NOT NULL");
      ENGRAM_RETURN_IF_ERROR(q.prepare_status());
      q.Bind(1, workspace);
      q.Bind(2, user_id);
      Status step;
      while (q.Step(&step)) CollectImageHashes(q.ColumnText(0), &hashes);
      ENGRAM_RETURN_IF_ERROR(step);
    }
    {
      sqlite::Stmt del(db,
                       "DELETE FROM memory_vectors WHERE memory_seq IN (SELECT seq FROM memories "
                       "WHERE kind = 'message' AND workspace = ? AND user_id = ?)");
      ENGRAM_RETURN_IF_ERROR(del.prepare_status());
      del.Bind(1, workspace);
      del.Bind(2, user_id);
      ENGRAM_RETURN_IF_ERROR(del.Exec());
      out.vectors = sqlite3_changes64(db);
    }
    {
      sqlite::Stmt del(db,
                       "DELETE FROM memories WHERE kind = 'message' AND workspace = ? AND "
                       "user_id = ?");
      ENGRAM_RETURN_IF_ERROR(del.prepare_status());
      del.Bind(1, workspace);
      del.Bind(2, user_id);
      ENGRAM_RETURN_IF_ERROR(del.Exec());
      out.messages = sqlite3_changes64(db);
    }
    if (!hashes.empty()) {
      // An image is stored once for every message that shows it: keep it while any remains.
      sqlite::Stmt del(db,
                       "DELETE FROM images WHERE sha256 = ?1 AND NOT EXISTS (SELECT 1 FROM "
                       "memories WHERE parts IS NOT NULL AND instr(parts, ?1) > 0)");
      ENGRAM_RETURN_IF_ERROR(del.prepare_status());
      for (const auto& hash : hashes) {
        del.Reset();
        del.Bind(1, hash);
        ENGRAM_RETURN_IF_ERROR(del.Exec());
        out.images += sqlite3_changes64(db);
      }
    }
    {
      sqlite::Stmt del(db, "DELETE FROM idempotency WHERE user_id = ?");
      ENGRAM_RETURN_IF_ERROR(del.prepare_status());
      del.Bind(1, user_id);
      ENGRAM_RETURN_IF_ERROR(del.Exec());
      out.idempotency = sqlite3_changes64(db);
    }
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
  int64_t total = 0;
  for (;;) {
    int64_t deleted = 0;
    ENGRAM_RETURN_IF_ERROR(Write([&](SqlTxn& txn) -> Status {
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
