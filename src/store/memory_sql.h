// Memory rows (Leaderboard messages and V4 agent memories) and the agent memories' events, history
// and feedback: the statements and rules of a row's insert, update, deletion and import, written
// once over SqlTxn (sql_txn.h) for both stores. What differs stays in the stores: where a memory's
// vector lives (SQLite keeps vectors in a table of their own; PostgreSQL in the row, which it
// stamps with a scope version, and it leaves tombstones for other nodes), SQLite's intake journal
// and PostgreSQL's event leases. Internal to store/.
//
// Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "store/sql_txn.h"
#include "store/transfer_store.h"
#include "store/types.h"

namespace engram::memory_sql {

// Inserts a memory row of `kind` ("message" | "memory") and fills m.seq; its vector is the
// store's to write. `extra`: PostgreSQL's scope version and vector columns.
Status InsertMemoryRow(SqlTxn& txn, std::string_view kind, MemoryRecord& m,
                       const ExtraColumns& extra = {});

// Updates the workspace's agent memory m.id to m (text, metadata, times, expiry, categories,
// provenance) and sets `extra`'s columns (PostgreSQL's scope version and vector); its seq, or
// nullopt when it no longer exists.
Result<std::optional<int64_t>> UpdateMemoryRow(SqlTxn& txn, std::string_view workspace,
                                               const MemoryRecord& m,
                                               const ExtraColumns& extra = {});

// What an event row insert does when the id exists: fail; leave the stored row (an event read
// back from SQLite's intake journal again); or set the end (status, result, error, updated_at)
// the row carries.
enum class OnConflict { kFail, kIgnore, kSetEnd };
// `extra`: PostgreSQL's lease columns.
Status InsertEvent(SqlTxn& txn, const MemoryEventRecord& event, OnConflict on_conflict,
                   const ExtraColumns& extra = {});
// Sets an event's status and error (not its result), stamped `now`.
Status SetEventStatus(SqlTxn& txn, std::string_view id, JobStatus status,
                      std::string_view error_message, int64_t now);
Status EventNotFound(std::string_view id);
// kNotFound when the workspace has no event row `id`.
Result<MemoryEventRecord> GetEvent(SqlTxn& txn, std::string_view workspace, std::string_view id);

Status InsertHistory(SqlTxn& txn, std::string_view workspace, const HistoryRecord& h);
// Oldest first.
Result<std::vector<HistoryRecord>> History(SqlTxn& txn, std::string_view workspace,
                                           std::string_view memory_id);

Status InsertFeedback(SqlTxn& txn, std::string_view workspace, const MemoryFeedbackRecord& f);
// Oldest first (ties by id).
Result<std::vector<MemoryFeedbackRecord>> Feedback(SqlTxn& txn, std::string_view workspace,
                                                   std::string_view memory_id);

// Deletes the workspace's agent memory `id` and the feedback on it (whose reason is the client's
// words); true when the memory's row was there.
Result<bool> DeleteMemory(SqlTxn& txn, std::string_view workspace, std::string_view id);

// Whether an import may write memory `m`: false when the workspace has it already (an import run
// again); kConflict when its id belongs to another workspace's memory or to a Leaderboard
// message.
Result<bool> ImportIsNew(SqlTxn& txn, const MemoryRecord& m);
// The imported memory's history and feedback rows (its own row is the store's to write).
Status InsertImportedRecords(SqlTxn& txn, const AgentMemoryImport& item);

}  // namespace engram::memory_sql
