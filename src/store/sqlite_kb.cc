// SqliteStore: knowledge-base documents (which double as their ingestion jobs) and their chunks.
#include <fmt/format.h>

#include "common/codec.h"
#include "common/time_util.h"
#include "store/job_rows.h"
#include "store/kb_rows.h"
#include "store/row_bounds.h"
#include "store/sqlite_store.h"
#include "store/sqlite_util.h"

namespace engram {

namespace {

constexpr JobVocabulary kDocWords = JobVocabulary::kKbDocument;

// Deletes what a document's upload or ingestion left beside its row: its chunks and its uploaded
// bytes. Every write that replaces, ends or deletes a document starts over from none.
Status DeleteDocData(sqlite3* db, std::string_view workspace, std::string_view kb_id,
                     std::string_view doc_id) {
  for (const char* table : {"kb_chunks", "kb_uploads"}) {
    sqlite::Stmt del(
        db, fmt::format("DELETE FROM {} WHERE workspace = ? AND kb_id = ? AND doc_id = ?", table));
    ENGRAM_RETURN_IF_ERROR(del.prepare_status());
    del.Bind(1, workspace);
    del.Bind(2, kb_id);
    del.Bind(3, doc_id);
    ENGRAM_RETURN_IF_ERROR(del.Exec());
  }
  return Status::Ok();
}

}  // namespace

Status SqliteStore::PutKbDoc(const KbDocRecord& doc) {
  return Submit([&doc](sqlite3* db) -> Status {
    ENGRAM_RETURN_IF_ERROR(DeleteDocData(db, doc.workspace, doc.kb_id, doc.id));
    sqlite::Stmt ins(db, fmt::format("INSERT OR REPLACE INTO kb_docs({}, content) "
                                     "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')",
                                     kb_rows::kDocColumns));
    ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
    ins.Bind(1, doc.workspace);
    ins.Bind(2, doc.kb_id);
    ins.Bind(3, doc.id);
    ins.Bind(4, doc.job_id);
    ins.Bind(5, doc.title);
    ins.Bind(6, doc.source_type);
    ins.Bind(7, doc.file_url);
    ins.Bind(8, JobStatusName(doc.status, kDocWords));
    ins.Bind(9, doc.error_message);
    ins.Bind(10, doc.created_at_us);
    ins.Bind(11, doc.updated_at_us);
    ENGRAM_RETURN_IF_ERROR(ins.Exec());
    if (doc.upload.empty()) return Status::Ok();
    sqlite::Stmt up(db,
                    "INSERT INTO kb_uploads(workspace, kb_id, doc_id, job_id, bytes) "
                    "VALUES(?, ?, ?, ?, ?)");
    ENGRAM_RETURN_IF_ERROR(up.prepare_status());
    up.Bind(1, doc.workspace);
    up.Bind(2, doc.kb_id);
    up.Bind(3, doc.id);
    up.Bind(4, doc.job_id);
    up.BindBlob(5, doc.upload);
    return up.Exec();
  });
}

Result<std::string> SqliteStore::GetKbUpload(std::string_view workspace, std::string_view kb_id,
                                             std::string_view id, std::string_view job_id) {
  return WithReader([&](sqlite3* db) -> Result<std::string> {
    sqlite::Stmt q(db,
                   "SELECT bytes FROM kb_uploads WHERE workspace = ? AND kb_id = ? AND "
                   "doc_id = ? AND job_id = ?");
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, kb_id);
    q.Bind(3, id);
    q.Bind(4, job_id);
    Status st;
    if (!q.Step(&st)) {
      if (!st.ok()) return st;
      return Status::NotFound(fmt::format("the uploaded bytes of document {} are gone", id));
    }
    return q.ColumnBlob(0);
  });
}

Result<bool> SqliteStore::FinishKbDoc(const KbDocRecord& doc,
                                      const std::vector<KbChunkRecord>& chunks) {
  bool applied = false;
  Status st = Submit([&](sqlite3* db) -> Status {
    applied = false;
    sqlite::Stmt up(db,
                    "UPDATE kb_docs SET status = ?, content = ?, error_message = ?, updated_at = ? "
                    "WHERE workspace = ? AND kb_id = ? AND id = ? AND job_id = ? AND " +
                        job_rows::UnfinishedCondition(kDocWords));
    ENGRAM_RETURN_IF_ERROR(up.prepare_status());
    up.Bind(1, JobStatusName(doc.status, kDocWords));
    up.Bind(2, doc.content);
    up.Bind(3, doc.error_message);
    up.Bind(4, doc.updated_at_us);
    up.Bind(5, doc.workspace);
    up.Bind(6, doc.kb_id);
    up.Bind(7, doc.id);
    up.Bind(8, doc.job_id);
    ENGRAM_RETURN_IF_ERROR(up.Exec());
    if (sqlite3_changes(db) == 0) return Status::Ok();  // deleted or uploaded again meanwhile
    applied = true;
    ENGRAM_RETURN_IF_ERROR(DeleteDocData(db, doc.workspace, doc.kb_id, doc.id));
    sqlite::Stmt ins(db,
                     "INSERT INTO kb_chunks(workspace, kb_id, doc_id, position, heading, text, "
                     "vector_model, vector) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
    for (const KbChunkRecord& c : chunks) {
      ins.Reset();
      ins.Bind(1, doc.workspace);
      ins.Bind(2, doc.kb_id);
      ins.Bind(3, doc.id);
      ins.Bind(4, static_cast<int64_t>(c.position));
      ins.Bind(5, c.heading);
      ins.Bind(6, c.text);
      ins.Bind(7, c.vector_model);
      if (c.vector.empty()) {
        ins.BindNull(8);
      } else {
        ins.BindBlob(8, FloatVectorBytes(c.vector));
      }
      ENGRAM_RETURN_IF_ERROR(ins.Exec());
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return applied;
}

Result<KbDocRecord> SqliteStore::GetKbDoc(std::string_view workspace, std::string_view kb_id,
                                          std::string_view id) {
  return WithReader([&](sqlite3* db) -> Result<KbDocRecord> {
    sqlite::Stmt q(db, fmt::format("SELECT {}, content FROM kb_docs WHERE workspace = ? AND "
                                   "kb_id = ? AND id = ?",
                                   kb_rows::kDocColumns));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, kb_id);
    q.Bind(3, id);
    Status st;
    if (!q.Step(&st)) {
      if (!st.ok()) return st;
      return Status::NotFound(fmt::format("document {} not found in knowledge base {}", id, kb_id));
    }
    return kb_rows::ReadDocRow(sqlite::StmtRow(q), /*with_content=*/true);
  });
}

Result<std::vector<KbDocRecord>> SqliteStore::ListKbDocs(std::string_view workspace,
                                                         std::string_view kb_id, size_t offset,
                                                         size_t limit, size_t* total) {
  return WithReader([&](sqlite3* db) -> Result<std::vector<KbDocRecord>> {
    sqlite::Stmt count(db, "SELECT COUNT(*) FROM kb_docs WHERE workspace = ? AND kb_id = ?");
    ENGRAM_RETURN_IF_ERROR(count.prepare_status());
    count.Bind(1, workspace);
    count.Bind(2, kb_id);
    Status st;
    *total = count.Step(&st) ? static_cast<size_t>(count.ColumnInt(0)) : 0;
    ENGRAM_RETURN_IF_ERROR(st);
    std::vector<KbDocRecord> out;
    sqlite::Stmt q(db, fmt::format("SELECT {} FROM kb_docs WHERE workspace = ? AND kb_id = ? "
                                   "ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                                   kb_rows::kDocColumns));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, kb_id);
    q.Bind(3, static_cast<int64_t>(limit));
    q.Bind(4, static_cast<int64_t>(offset));
    while (q.Step(&st))
      out.push_back(kb_rows::ReadDocRow(sqlite::StmtRow(q), /*with_content=*/false));
    if (!st.ok()) return st;
    return out;
  });
}

Result<std::vector<KnowledgeBaseSummary>> SqliteStore::ListKnowledgeBases(
    std::string_view workspace, size_t offset, size_t limit, size_t* total) {
  *total = 0;
  return WithReader([&](sqlite3* db) -> Result<std::vector<KnowledgeBaseSummary>> {
    sqlite::Stmt count(db, "SELECT count(DISTINCT kb_id) FROM kb_docs WHERE workspace = ?");
    ENGRAM_RETURN_IF_ERROR(count.prepare_status());
    count.Bind(1, workspace);
    Status st;
    *total = count.Step(&st) ? static_cast<size_t>(count.ColumnInt(0)) : 0;
    ENGRAM_RETURN_IF_ERROR(st);
    std::vector<KnowledgeBaseSummary> out;
    sqlite::Stmt q(db, fmt::format("SELECT {} FROM kb_docs WHERE workspace = ? GROUP BY kb_id "
                                   "ORDER BY kb_id LIMIT ? OFFSET ?",
                                   kb_rows::SummaryColumns()));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, SqlRowBound(limit));
    q.Bind(3, SqlRowBound(offset));
    while (q.Step(&st)) {
      out.push_back({.kb_id = q.ColumnText(0),
                     .documents = q.ColumnInt(1),
                     .processing = q.ColumnInt(2),
                     .failed = q.ColumnInt(3),
                     .updated_at_us = q.ColumnInt(4)});
    }
    if (!st.ok()) return st;
    return out;
  });
}

Result<bool> SqliteStore::DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                                      std::string_view id) {
  bool deleted = false;
  Status st = Submit([&](sqlite3* db) -> Status {
    sqlite::Stmt del(db, "DELETE FROM kb_docs WHERE workspace = ? AND kb_id = ? AND id = ?");
    ENGRAM_RETURN_IF_ERROR(del.prepare_status());
    del.Bind(1, workspace);
    del.Bind(2, kb_id);
    del.Bind(3, id);
    ENGRAM_RETURN_IF_ERROR(del.Exec());
    deleted = sqlite3_changes(db) > 0;
    return DeleteDocData(db, workspace, kb_id, id);
  });
  if (!st.ok()) return st;
  return deleted;
}

Result<std::vector<KbChunkRecord>> SqliteStore::LoadKbChunks(std::string_view workspace,
                                                             std::string_view kb_id) {
  return WithReader([&](sqlite3* db) -> Result<std::vector<KbChunkRecord>> {
    std::vector<KbChunkRecord> out;
    sqlite::Stmt q(db,
                   "SELECT c.doc_id, c.position, c.heading, c.text, c.vector_model, c.vector, "
                   "d.title FROM kb_chunks c JOIN kb_docs d ON d.workspace = c.workspace AND "
                   "d.kb_id = c.kb_id AND d.id = c.doc_id WHERE c.workspace = ? AND c.kb_id = ? "
                   "ORDER BY c.doc_id, c.position");
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, kb_id);
    Status st;
    while (q.Step(&st)) {
      KbChunkRecord c;
      c.doc_id = q.ColumnText(0);
      c.position = static_cast<int32_t>(q.ColumnInt(1));
      c.heading = q.ColumnText(2);
      c.text = q.ColumnText(3);
      c.vector_model = q.ColumnText(4);
      if (!q.ColumnIsNull(5)) c.vector = FloatVectorFromBytes(q.ColumnBlob(5));
      c.title = q.ColumnText(6);
      out.push_back(std::move(c));
    }
    if (!st.ok()) return st;
    return out;
  });
}

Result<std::vector<KbDocRecord>> SqliteStore::UnfinishedKbDocs() {
  return WithReader([&](sqlite3* db) -> Result<std::vector<KbDocRecord>> {
    std::vector<KbDocRecord> out;
    sqlite::Stmt q(db, fmt::format("SELECT {} FROM kb_docs WHERE {} ORDER BY created_at",
                                   kb_rows::kDocColumns, job_rows::UnfinishedCondition(kDocWords)));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    Status st;
    while (q.Step(&st))
      out.push_back(kb_rows::ReadDocRow(sqlite::StmtRow(q), /*with_content=*/false));
    if (!st.ok()) return st;
    return out;
  });
}

}  // namespace engram
