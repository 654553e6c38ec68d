// What the SQLite and PostgreSQL knowledge-base stores share beyond the schema. Internal to
// store/. Thread-safety: pure functions.
#pragma once

#include <string>

namespace engram::kb_rows {

// The select list of ListKnowledgeBases over kb_docs GROUP BY kb_id: kb_id, documents, processing,
// failed, latest updated_at (each count a 64-bit integer in both databases).
const std::string& SummaryColumns();

}  // namespace engram::kb_rows
