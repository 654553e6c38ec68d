#include "store/pg_rows.h"

#include <fmt/format.h>

#include "store/categories_json.h"
#include "store/pg_pool.h"
#include "store/row_bounds.h"

namespace engram::pg {

const char* const kMemoryColumns =
    "seq, id, workspace, user_id, agent_id, run_id, session_id, role, text, parts, metadata, "
    "source_ts, position, created_at, updated_at, vector_model, vector, expires_at, app_id, "
    "categories, provenance";

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

void InsertMemoryRow(pqxx::transaction_base& txn, std::string_view kind, int64_t version,
                     MemoryRecord& m) {
  const bool has_vector = !m.vector.empty();
  const std::optional<std::string> parts =
      m.parts_json.empty() ? std::nullopt : std::optional<std::string>(m.parts_json);
  const std::optional<std::string> source_ts = IntOrNull(m.source_ts_us);
  const std::optional<std::string> expires_at = IntOrNull(m.expires_at_us);
  // A memory without a vector stores neither vector nor model (SQLite has no vector row then).
  m.seq = txn.exec_params1(
                 "INSERT INTO memories(id, workspace, user_id, agent_id, run_id, session_id, role, "
                 "text, parts, metadata, source_ts, position, created_at, updated_at, kind, "
                 "expires_at, version, vector_model, vector, app_id, categories, provenance) "
                 "VALUES($1, "
                 "$2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, "
                 "CASE WHEN $19 THEN $20::bytea END, $21, $22, $23) RETURNING seq",
                 m.id, m.workspace, m.user_id, m.agent_id, m.run_id, m.session_id, m.role, m.text,
                 OrNull(parts), m.metadata_json, OrNull(source_ts), m.position, m.created_at_us,
                 m.updated_at_us, std::string(kind), OrNull(expires_at), version,
                 has_vector ? m.vector_model : std::string(), has_vector, VectorBytes(m.vector),
                 m.app_id, CategoriesToJson(m.categories), m.provenance_json)[0]
              .as<int64_t>();
}

}  // namespace engram::pg
