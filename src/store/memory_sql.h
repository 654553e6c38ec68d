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
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/sql_txn.h"
#include "store/transfer_store.h"
#include "store/types.h"

namespace engram::memory_sql {

// Where a store reads memory rows: `columns`, the ones memory_rows::ReadMemoryRow reads (each
// store's, with its vector and model), over `from`, which names the memories table `m` (SQLite
// joins its vectors' table there; PostgreSQL's rows hold their vectors).
struct MemorySource {
  std::string_view columns;
  std::string_view from;
};
// The conditions of a scope's rows, over the memories table's own column names: a user's
// Leaderboard messages ($1 workspace, $2 user_id) and a workspace's agent memories ($1).
inline constexpr std::string_view kMessagesOfUser =
    "kind = 'message' AND workspace = $1 AND user_id = $2";
inline constexpr std::string_view kAgentMemoriesOf = "kind = 'memory' AND workspace = $1";
// The rows of `source` that meet `condition`, by seq.
Result<std::vector<MemoryRecord>> LoadMemories(SqlTxn& txn, const MemorySource& source,
                                               std::string_view condition, const SqlParams& params);

// Inserts a memory row of `kind` ("message" | "memory") and fills m.seq; its vector is the
// store's to write. `extra`: PostgreSQL's scope version and vector columns.
Status InsertMemoryRow(SqlTxn& txn, std::string_view kind, MemoryRecord& m,
                       const ExtraColumns& extra = {});

// The store's parts of applying agent memory changes.
struct ChangeHooks {
  // Inserts an agent memory row (kind "memory") and its vector, filling m.seq.
  std::function<Status(MemoryRecord&)> insert_row;
  // Applies an update (row and vector); false when the memory no longer exists.
  std::function<Result<bool>(const MemoryChange&)> update_row;
  // Runs after the deletion of memory `id`'s row (PostgreSQL's tombstone). May be empty.
  std::function<Status(const std::string& id)> after_delete;
};
// Applies batch.changes in order within `txn`: each one that applies gets its history row (event
// batch.event_id, stamped `now`); outcome->applied says which did and outcome->inserted holds the
// inserted memories as written. The batch's event end is the caller's to write.
Status ApplyChanges(SqlTxn& txn, const MemoryChangeBatch& batch, int64_t now,
                    const ChangeHooks& hooks, MemoryChangeOutcome* outcome);

// What an update does to the memory's vector: sets the one it brings; else keeps the stored one
// when the text is unchanged (it still fits), or drops it when the text changed (it describes the
// old text; backfill embeds the new one rather than serve it).
enum class VectorUpdateKind { kSet, kKeep, kDrop };
VectorUpdateKind VectorOnUpdate(const MemoryChange& c);

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
// The ADD and UPDATE rows of every memory of the workspace with an UPDATE row, oldest first.
Result<std::vector<HistoryRecord>> ReplacedHistory(SqlTxn& txn, std::string_view workspace);

Status InsertFeedback(SqlTxn& txn, std::string_view workspace, const MemoryFeedbackRecord& f);
// Oldest first (ties by id).
Result<std::vector<MemoryFeedbackRecord>> Feedback(SqlTxn& txn, std::string_view workspace,
                                                   std::string_view memory_id);

// Deletes the workspace's agent memory `id` and the feedback on it (whose reason is the client's
// words); true when the memory's row was there.
Result<bool> DeleteMemory(SqlTxn& txn, std::string_view workspace, std::string_view id);

// Writes an exported agent memory as it was exported: its row through `insert_row` (kind "memory",
// with its vector; PostgreSQL also moves the workspace's version there), its history and its
// feedback. False, writing nothing, when the workspace has the memory already (an import run
// again); kConflict when its id belongs to another workspace's memory or to a Leaderboard message.
Result<bool> Import(SqlTxn& txn, const AgentMemoryImport& item,
                    const std::function<Status(MemoryRecord&)>& insert_row);

}  // namespace engram::memory_sql
