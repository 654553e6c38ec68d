// Memory rows as both stores read them: one reader for the columns each backend's kMemories
// selects (sqlite_rows.h, pg_rows.h), which are the same values in the same order. Internal to
// store/. Thread-safety: pure functions.
#pragma once

#include "store/row_reader.h"
#include "store/types.h"

namespace engram::memory_rows {

// A row of kMemories' columns (memory_sql::MemorySource): the vector and its model when the row has
// a vector.
MemoryRecord ReadMemoryRow(const RowReader& row);

}  // namespace engram::memory_rows
