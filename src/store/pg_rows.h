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

#include "common/status.h"
#include "store/types.h"

namespace engram::pg {

// Columns read by memory_rows::ReadMemoryRow, from `memories`.
extern const char* const kMemoryColumns;

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

// Inserts a memory row of `kind` ("message" | "memory") stamped with scope `version`, with its
// vector if it has one; fills m.seq.
Status InsertMemoryRow(pqxx::transaction_base& txn, std::string_view kind, int64_t version,
                       MemoryRecord& m);

}  // namespace engram::pg
