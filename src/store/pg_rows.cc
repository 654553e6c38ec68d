#include "store/pg_rows.h"

#include <fmt/format.h>

#include "store/job_rows.h"
#include "store/memory_sql.h"
#include "store/pg_pool.h"
#include "store/pg_sql_txn.h"
#include "store/row_bounds.h"

namespace engram::pg {

const memory_sql::MemorySource kMemories = {
    "m.seq, m.id, m.workspace, m.user_id, m.agent_id, m.run_id, m.session_id, m.role, m.text, "
    "m.parts, m.metadata, m.source_ts, m.position, m.created_at, m.updated_at, m.vector_model, "
    "m.vector, m.expires_at, m.app_id, m.categories, m.provenance",
    "memories m"};

Status CheckText(std::string_view field, std::string_view value) {
  if (value.find('\0') == std::string_view::npos) return Status::Ok();
  return Status::InvalidParameter(fmt::format("{}: text contains a NUL character", field));
}

Status CheckText(std::initializer_list<std::pair<std::string_view, const char*>> fields) {
  for (const auto& [value, name] : fields) ENGRAM_RETURN_IF_ERROR(CheckText(name, value));
  return Status::Ok();
}

Status CheckMemoryText(const MemoryRecord& m) {
  ENGRAM_RETURN_IF_ERROR(CheckText("memory id", m.id));
  ENGRAM_RETURN_IF_ERROR(CheckText("workspace", m.workspace));
  ENGRAM_RETURN_IF_ERROR(CheckText("user_id", m.user_id));
  ENGRAM_RETURN_IF_ERROR(CheckText("agent_id", m.agent_id));
  ENGRAM_RETURN_IF_ERROR(CheckText("run_id", m.run_id));
  ENGRAM_RETURN_IF_ERROR(CheckText("app_id", m.app_id));
  for (const std::string& c : m.categories) ENGRAM_RETURN_IF_ERROR(CheckText("category", c));
  ENGRAM_RETURN_IF_ERROR(CheckText("session_id", m.session_id));
  ENGRAM_RETURN_IF_ERROR(CheckText("role", m.role));
  ENGRAM_RETURN_IF_ERROR(CheckText("memory text", m.text));
  ENGRAM_RETURN_IF_ERROR(CheckText("memory parts", m.parts_json));
  ENGRAM_RETURN_IF_ERROR(CheckText("memory metadata", m.metadata_json));
  ENGRAM_RETURN_IF_ERROR(CheckText("memory provenance", m.provenance_json));
  return CheckText("vector model", m.vector_model);
}

Status RefuseSecondEnd(pqxx::transaction_base& txn, std::string_view table,
                       JobVocabulary vocabulary, std::string_view noun, const std::string& id) {
  pqxx::result cur =
      txn.exec_params(fmt::format("SELECT status FROM {} WHERE id = $1 FOR UPDATE", table), id);
  if (cur.empty()) return Status::Ok();
  const std::string word = cur[0][0].as<std::string>();
  if (!IsFinished(job_rows::ReadStatus(word, vocabulary, id))) return Status::Ok();
  return Status::Conflict(fmt::format("{} {} was already finished ({})", noun, id, word));
}

Status InsertMemoryRow(pqxx::transaction_base& txn, std::string_view kind, int64_t version,
                       MemoryRecord& m) {
  PgTxn sql(txn);
  // A memory without a vector stores neither vector nor model (SQLite has no vector row then).
  const bool has_vector = !m.vector.empty();
  return memory_sql::InsertMemoryRow(
      sql, kind, m,
      {{"version", "vector_model", "vector"},
       {version, has_vector ? m.vector_model : std::string(), SqlValue::Vector(m.vector)}});
}

}  // namespace engram::pg
