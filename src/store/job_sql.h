// Statements every store runs on its job tables (memory_events, skill_tasks), written once over
// SqlTxn (sql_txn.h). Internal to store/.
// Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "store/sql_txn.h"

namespace engram::job_sql {

// A workspace's rows of `table`, newest first (created_at, then id descending): [offset,
// offset + limit) of them, `columns` selected, each passed to `row`; `total` gets their count.
Status NewestFirst(SqlTxn& txn, std::string_view table, std::string_view columns,
                   std::string_view workspace, size_t offset, size_t limit, size_t* total,
                   const std::function<void(const RowReader&)>& row);

}  // namespace engram::job_sql
