// The Leaderboard data lifecycle, written once over SqlTxn (sql_txn.h) for both stores: deleting a
// user's data, users idle past the retention, and idempotency records expired a chunk at a time.
// What differs stays in the stores: where vectors live, PostgreSQL's scope versions, and SQLite's
// removal of the deleted text's old copies from its write-ahead log. Internal to store/.
//
// Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "store/sql_txn.h"
#include "store/types.h"

namespace engram::lifecycle_sql {

// Deletes the workspace's Leaderboard messages of `user_id`, the images that no remaining message
// shows and the user's idempotency records; how many of each. `drop_vectors` runs first: it
// deletes the messages' vectors where the store keeps them apart, or counts those the rows hold
// (memory_sql::kMessagesOfUser, with $1 workspace and $2 user_id, selects the messages).
Result<UserDeletion> DeleteUser(SqlTxn& txn, std::string_view workspace, std::string_view user_id,
                                const std::function<Result<int64_t>(SqlTxn&)>& drop_vectors);

// Up to `limit` users of the workspace whose latest Leaderboard message is older than `before_us`.
Result<std::vector<std::string>> IdleUsers(SqlTxn& txn, std::string_view workspace,
                                           int64_t before_us, size_t limit);

// Idempotency records deleted per transaction, so one sweep never holds the writer (SQLite) or
// many row locks (PostgreSQL) for long.
inline constexpr int64_t kExpireChunk = 5000;
// Deletes up to kExpireChunk idempotency records created before `before_s`; how many went. A
// sweep runs this, each in a transaction of its own, until fewer than kExpireChunk go.
Result<int64_t> ExpireIdempotencyChunk(SqlTxn& txn, int64_t before_s);

// Deletes the idempotency records created before `before_s` with ExpireIdempotencyChunk, each
// chunk in a transaction of its own that `write` runs (write(fn) runs fn(SqlTxn&) -> Status and
// commits); how many went.
template <typename Write>
Result<int64_t> ExpireIdempotency(Write&& write, int64_t before_s) {
  int64_t total = 0;
  for (;;) {
    int64_t deleted = 0;
    ENGRAM_RETURN_IF_ERROR(write([&](SqlTxn& txn) -> Status {
      Result<int64_t> n = ExpireIdempotencyChunk(txn, before_s);
      if (!n.ok()) return n.status();
      deleted = *n;
      return Status::Ok();
    }));
    total += deleted;
    if (deleted < kExpireChunk) return total;
  }
}

}  // namespace engram::lifecycle_sql
