// The Leaderboard data lifecycle's statements that both stores run alike, written once over
// SqlTxn (sql_txn.h): users idle past the retention, and idempotency records expired a chunk at a
// time. A user's deletion stays in each store: where vectors live and how a text is searched for
// an image hash differ. Internal to store/.
//
// Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/sql_txn.h"

namespace engram::lifecycle_sql {

// Up to `limit` users of the workspace whose latest Leaderboard message is older than `before_us`.
Result<std::vector<std::string>> IdleUsers(SqlTxn& txn, std::string_view workspace,
                                           int64_t before_us, size_t limit);

// Idempotency records deleted per transaction, so one sweep never holds the writer (SQLite) or
// many row locks (PostgreSQL) for long.
inline constexpr int64_t kExpireChunk = 5000;
// Deletes up to kExpireChunk idempotency records created before `before_s`; how many went. A
// sweep runs this, each in a transaction of its own, until fewer than kExpireChunk go.
Result<int64_t> ExpireIdempotencyChunk(SqlTxn& txn, int64_t before_s);

}  // namespace engram::lifecycle_sql
