// SqliteStore: knowledge-base documents (which double as their ingestion jobs) and their chunks.
// The statements and rules are kb_sql.h's; writes run in the writer's group commit, reads on a
// read connection.
#include <fmt/format.h>

#include "store/job_rows.h"
#include "store/kb_rows.h"
#include "store/kb_sql.h"
#include "store/sqlite_sql_txn.h"
#include "store/sqlite_store.h"

namespace engram {

Status SqliteStore::PutKbDoc(const KbDocRecord& doc) {
  return Write([&doc](SqlTxn& txn) { return kb_sql::Put(txn, doc); });
}

Result<std::string> SqliteStore::GetKbUpload(std::string_view workspace, std::string_view kb_id,
                                             std::string_view id, std::string_view job_id) {
  return Read([&](SqlTxn& txn) { return kb_sql::Upload(txn, workspace, kb_id, id, job_id); });
}

Result<bool> SqliteStore::FinishKbDoc(const KbDocRecord& doc,
                                      const std::vector<KbChunkRecord>& chunks) {
  bool applied = false;
  Status st = Write([&](SqlTxn& txn) -> Status {
    Result<bool> r = kb_sql::Finish(txn, doc, chunks);
    if (!r.ok()) return r.status();
    applied = *r;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return applied;
}

Result<KbDocRecord> SqliteStore::GetKbDoc(std::string_view workspace, std::string_view kb_id,
                                          std::string_view id) {
  return Read([&](SqlTxn& txn) { return kb_sql::Get(txn, workspace, kb_id, id); });
}

Result<std::vector<KbDocRecord>> SqliteStore::ListKbDocs(std::string_view workspace,
                                                         std::string_view kb_id, size_t offset,
                                                         size_t limit, size_t* total) {
  return Read(
      [&](SqlTxn& txn) { return kb_sql::List(txn, workspace, kb_id, offset, limit, total); });
}

Result<std::vector<KnowledgeBaseSummary>> SqliteStore::ListKnowledgeBases(
    std::string_view workspace, size_t offset, size_t limit, size_t* total) {
  return Read([&](SqlTxn& txn) { return kb_sql::ListBases(txn, workspace, offset, limit, total); });
}

Result<bool> SqliteStore::DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                                      std::string_view id) {
  bool deleted = false;
  Status st = Write([&](SqlTxn& txn) -> Status {
    Result<kb_sql::Deleted> r = kb_sql::Delete(txn, workspace, kb_id, id);
    if (!r.ok()) return r.status();
    deleted = r->document;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return deleted;
}

Result<std::vector<KbChunkRecord>> SqliteStore::LoadKbChunks(std::string_view workspace,
                                                             std::string_view kb_id) {
  return Read([&](SqlTxn& txn) { return kb_sql::Chunks(txn, workspace, kb_id); });
}

Result<std::vector<KbDocRecord>> SqliteStore::UnfinishedKbDocs() {
  // One node: every PROCESSING document is this process's to resume, oldest first.
  return Read([&](SqlTxn& txn) {
    return txn.QueryAll<KbDocRecord>(
        fmt::format("SELECT {} FROM kb_docs WHERE {} ORDER BY created_at", kb_rows::kDocColumns,
                    job_rows::UnfinishedCondition(JobVocabulary::kKbDocument)),
        {}, [](const RowReader& r) { return kb_rows::ReadDocRow(r, /*with_content=*/false); });
  });
}

}  // namespace engram
