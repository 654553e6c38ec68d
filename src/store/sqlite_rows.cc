#include "store/sqlite_rows.h"

#include "common/codec.h"
#include "store/categories_json.h"

namespace engram::sqlite {

const char* const kMemoryColumns =
    "m.seq, m.id, m.workspace, m.user_id, m.agent_id, m.run_id, m.session_id, m.role, m.text, "
    "m.parts, m.metadata, m.source_ts, m.position, m.created_at, m.updated_at, v.model, v.vector, "
    "m.expires_at, m.app_id, m.categories, m.provenance";

Status InsertMemoryRow(sqlite3* db, std::string_view kind, MemoryRecord& m) {
  Stmt ins(
      db,
      "INSERT INTO memories(id, workspace, user_id, agent_id, run_id, session_id, role, text, "
      "parts, metadata, source_ts, position, created_at, updated_at, kind, expires_at, app_id, "
      "categories, provenance) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
  ins.Bind(1, m.id);
  ins.Bind(2, m.workspace);
  ins.Bind(3, m.user_id);
  ins.Bind(4, m.agent_id);
  ins.Bind(5, m.run_id);
  ins.Bind(6, m.session_id);
  ins.Bind(7, m.role);
  ins.Bind(8, m.text);
  if (m.parts_json.empty()) {
    ins.BindNull(9);
  } else {
    ins.Bind(9, m.parts_json);
  }
  ins.Bind(10, m.metadata_json);
  ins.Bind(11, m.source_ts_us);
  ins.Bind(12, static_cast<int64_t>(m.position));
  ins.Bind(13, m.created_at_us);
  ins.Bind(14, m.updated_at_us);
  ins.Bind(15, kind);
  ins.Bind(16, m.expires_at_us);
  ins.Bind(17, m.app_id);
  ins.Bind(18, CategoriesToJson(m.categories));
  ins.Bind(19, m.provenance_json);
  ENGRAM_RETURN_IF_ERROR(ins.Exec());
  m.seq = sqlite3_last_insert_rowid(db);
  if (!m.vector.empty()) return InsertVector(db, m.seq, m.vector_model, m.vector);
  return Status::Ok();
}

Status InsertVector(sqlite3* db, int64_t seq, const std::string& model,
                    const std::vector<float>& vector) {
  Stmt ins(db,
           "INSERT OR REPLACE INTO memory_vectors(memory_seq, model, dim, vector) "
           "VALUES(?, ?, ?, ?)");
  ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
  ins.Bind(1, seq);
  ins.Bind(2, model);
  ins.Bind(3, static_cast<int64_t>(vector.size()));
  ins.BindBlob(4, FloatVectorBytes(vector));
  return ins.Exec();
}

}  // namespace engram::sqlite
