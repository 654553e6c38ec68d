// What the SQLite and PostgreSQL knowledge-base stores share beyond the schema. Internal to
// store/. Thread-safety: pure functions.
#pragma once

#include <string>

#include "store/kb_types.h"
#include "store/row_reader.h"

namespace engram::kb_rows {

// The select list of ListKnowledgeBases over kb_docs GROUP BY kb_id: kb_id, documents, processing,
// failed, latest updated_at (each count a 64-bit integer in both databases).
const std::string& SummaryColumns();

// The columns of a document row (content apart), in the order both stores read them; content, when
// selected, follows as column 11.
inline constexpr const char* kDocColumns =
    "workspace, kb_id, id, job_id, title, source_type, file_url, status, error_message, "
    "created_at, updated_at";

// A row of kDocColumns, and of content after them when `with_content`.
KbDocRecord ReadDocRow(const RowReader& row, bool with_content);

}  // namespace engram::kb_rows
