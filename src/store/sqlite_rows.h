// Row mapping shared by the SQLite store's files: memory rows and their vectors.
// Internal to store/. Thread-safety: functions use only the connection they are given.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/memory_sql.h"
#include "store/sqlite_util.h"
#include "store/types.h"

namespace engram::sqlite {

// Memory rows with their vectors: `memories m LEFT JOIN memory_vectors v`.
extern const memory_sql::MemorySource kMemories;

// Inserts a memory row of `kind` ("message" | "memory") and its vector if it has one; fills m.seq.
Status InsertMemoryRow(sqlite3* db, std::string_view kind, MemoryRecord& m);

// Stores (or replaces) the vector of memory `seq`.
Status InsertVector(sqlite3* db, int64_t seq, const std::string& model,
                    const std::vector<float>& vector);

}  // namespace engram::sqlite
