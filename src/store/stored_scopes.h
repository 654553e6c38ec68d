// The one query both backends answer ListStoredScopes with, and the folding of its rows.
// Internal to store/. Thread-safety: pure functions and a constant.
#pragma once

#include <string_view>

#include "store/sql_txn.h"
#include "store/transfer_store.h"

namespace engram::stored_scopes {

// Rows (tag, workspace, key): 'l' a Leaderboard user (key: user_id), 'm' a workspace with agent
// memories, 's' one with skills, 'k' a knowledge base (key: kb_id). Plain SQL both SQLite and
// PostgreSQL run; each row once.
inline constexpr const char* kSql =
    "SELECT 'l', workspace, user_id FROM memories WHERE kind = 'message' "
    "GROUP BY workspace, user_id "
    "UNION ALL SELECT 'm', workspace, '' FROM memories WHERE kind = 'memory' GROUP BY workspace "
    "UNION ALL SELECT 's', workspace, '' FROM skills GROUP BY workspace "
    "UNION ALL SELECT 'k', workspace, kb_id FROM kb_docs GROUP BY workspace, kb_id";

// Adds one row of kSql to `out`.
void Add(std::string_view tag, std::string_view workspace, std::string_view key, StoredScopes* out);
// Sorts every list bytewise, whatever the database's collation.
void Sort(StoredScopes* out);

// The scopes the store holds: kSql run on `txn`, folded and sorted.
Result<StoredScopes> List(SqlTxn& txn);

}  // namespace engram::stored_scopes
