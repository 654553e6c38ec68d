#include "store/sqlite_rows.h"

#include "common/codec.h"
#include "store/memory_sql.h"
#include "store/sqlite_sql_txn.h"
#include "store/sqlite_util.h"

namespace engram::sqlite {

const memory_sql::MemorySource kMemories = {
    "m.seq, m.id, m.workspace, m.user_id, m.agent_id, m.run_id, m.session_id, m.role, m.text, "
    "m.parts, m.metadata, m.source_ts, m.position, m.created_at, m.updated_at, v.model, v.vector, "
    "m.expires_at, m.app_id, m.categories, m.provenance",
    "memories m LEFT JOIN memory_vectors v ON v.memory_seq = m.seq"};

Status InsertMemoryRow(sqlite3* db, std::string_view kind, MemoryRecord& m) {
  SqliteTxn txn(db);
  ENGRAM_RETURN_IF_ERROR(memory_sql::InsertMemoryRow(txn, kind, m));
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
