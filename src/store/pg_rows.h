// Row mapping shared by the PostgreSQL store's files: memory rows (vector included) and the
// NUL-byte check every write runs first.
// Internal to store/. Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>

#include "common/job_status.h"
#include "common/status.h"
#include "store/memory_sql.h"
#include "store/types.h"

namespace engram::pg {

// Memory rows, each with its vector.
extern const memory_sql::MemorySource kMemories;

// PostgreSQL text cannot hold a NUL byte (and libpq would cut the value at the first one), so a
// write checks its text before touching the database: kInvalidParameter naming `field`.
Status CheckText(std::string_view field, std::string_view value);
// The same for several fields at once: {value, name} pairs, the first offender named.
Status CheckText(std::initializer_list<std::pair<std::string_view, const char*>> fields);
// A key with a NUL byte was never stored (writes refuse it), so reads answer "none" for it
// without asking the database.
inline bool HasNul(std::string_view key) { return key.find('\0') != std::string_view::npos; }
// Every text field of a memory written on insert.
Status CheckMemoryText(const MemoryRecord& m);

// Returned from a write transaction that found nothing to change, so the scope version it bumped
// first (to serialise the scope's writers) is rolled back with it; the caller, which remembered
// why, turns it back into its answer.
inline Status NothingChanged() { return Status::NotFound("nothing changed"); }

// A node stalled past its lease may end a job (`table` memory_events or skill_tasks, words of
// `vocabulary`) that another node already ended: the first end stands. kConflict naming the `noun`
// when row `id` is finished; the row stays locked (FOR UPDATE) until the transaction ends, so no
// other node ends it meanwhile.
Status RefuseSecondEnd(pqxx::transaction_base& txn, std::string_view table,
                       JobVocabulary vocabulary, std::string_view noun, const std::string& id);

// Inserts a memory row of `kind` ("message" | "memory") stamped with scope `version`, with its
// vector if it has one; fills m.seq.
Status InsertMemoryRow(pqxx::transaction_base& txn, std::string_view kind, int64_t version,
                       MemoryRecord& m);

}  // namespace engram::pg
