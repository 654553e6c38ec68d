#include "store/kb_sql.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "store/job_rows.h"
#include "store/kb_rows.h"
#include "store/row_bounds.h"

namespace engram::kb_sql {

namespace {

constexpr JobVocabulary kDocWords = JobVocabulary::kKbDocument;

// Deletes what a document's upload or ingestion left beside its row: its chunks and its uploaded
// bytes. Every write that replaces, ends or deletes a document starts over from none. The number
// of rows that went.
Result<int64_t> DeleteDocData(SqlTxn& txn, std::string_view workspace, std::string_view kb_id,
                              std::string_view doc_id) {
  int64_t rows = 0;
  for (const char* table : {"kb_chunks", "kb_uploads"}) {
    Result<int64_t> n = txn.Exec(
        fmt::format("DELETE FROM {} WHERE workspace = $1 AND kb_id = $2 AND doc_id = $3", table),
        {workspace, kb_id, doc_id});
    if (!n.ok()) return n.status();
    rows += *n;
  }
  return rows;
}

// A document's chunks, a few hundred rows a statement rather than a statement each: PostgreSQL
// holds the knowledge base's scope lock meanwhile, and one round trip a chunk would stretch it.
Status InsertChunks(SqlTxn& txn, const KbDocRecord& doc, const std::vector<KbChunkRecord>& chunks) {
  // 5 parameters a row: far below libpq's 65,535 and SQLite's 32,766.
  constexpr size_t kRowsPerStatement = 500;
  for (size_t begin = 0; begin < chunks.size(); begin += kRowsPerStatement) {
    const size_t end = std::min(chunks.size(), begin + kRowsPerStatement);
    std::string sql =
        "INSERT INTO kb_chunks(workspace, kb_id, doc_id, position, heading, text, vector_model, "
        "vector) VALUES ";
    SqlParams params = {doc.workspace, doc.kb_id, doc.id};
    for (size_t i = begin; i < end; ++i) {
      const KbChunkRecord& c = chunks[i];
      fmt::format_to(std::back_inserter(sql), "{}($1, $2, $3, {})", i == begin ? "" : ", ",
                     Placeholders(static_cast<int>(params.size()) + 1, 5));
      params.insert(params.end(), {int64_t{c.position}, c.heading, c.text, c.vector_model,
                                   SqlValue::Vector(c.vector)});
    }
    ENGRAM_RETURN_IF_ERROR(txn.Exec(sql, params).status());
  }
  return Status::Ok();
}

KbChunkRecord ReadChunkRow(const RowReader& row) {
  KbChunkRecord c;
  c.doc_id = row.Text(0);
  c.position = static_cast<int32_t>(row.Int(1));
  c.heading = row.Text(2);
  c.text = row.Text(3);
  c.vector_model = row.Text(4);
  c.vector = row.Vector(5);
  c.title = row.Text(6);
  return c;
}

Result<size_t> Count(SqlTxn& txn, std::string_view sql, const SqlParams& params) {
  Result<std::optional<int64_t>> n =
      txn.QueryFirst<int64_t>(sql, params, [](const RowReader& r) { return r.Int(0); });
  if (!n.ok()) return n.status();
  return n->has_value() ? static_cast<size_t>(**n) : size_t{0};
}

}  // namespace

Status DocNotFound(std::string_view kb_id, std::string_view id) {
  return Status::NotFound(fmt::format("document {} not found in knowledge base {}", id, kb_id));
}

Status UploadGone(std::string_view id) {
  return Status::NotFound(fmt::format("the uploaded bytes of document {} are gone", id));
}

Status Put(SqlTxn& txn, const KbDocRecord& doc, const ExtraColumns& extra) {
  ENGRAM_RETURN_IF_ERROR(DeleteDocData(txn, doc.workspace, doc.kb_id, doc.id).status());
  SqlParams params = {doc.workspace,
                      doc.kb_id,
                      doc.id,
                      doc.job_id,
                      doc.title,
                      doc.source_type,
                      doc.file_url,
                      job_rows::StoredWord(doc.status, kDocWords),
                      doc.error_message,
                      doc.created_at_us,
                      doc.updated_at_us,
                      ""};  // content, set when the job ends
  std::string replace =
      "job_id = EXCLUDED.job_id, title = EXCLUDED.title, source_type = EXCLUDED.source_type, "
      "file_url = EXCLUDED.file_url, status = EXCLUDED.status, "
      "error_message = EXCLUDED.error_message, created_at = EXCLUDED.created_at, "
      "updated_at = EXCLUDED.updated_at, content = EXCLUDED.content";
  for (std::string_view name : extra.names) {
    fmt::format_to(std::back_inserter(replace), ", {0} = EXCLUDED.{0}", name);
  }
  const std::string insert =
      InsertInto("kb_docs", fmt::format("{}, content", kb_rows::kDocColumns), extra, params);
  ENGRAM_RETURN_IF_ERROR(
      txn.Exec(insert + " ON CONFLICT (workspace, kb_id, id) DO UPDATE SET " + replace, params)
          .status());
  if (doc.upload.empty()) return Status::Ok();
  return txn
      .Exec(
          "INSERT INTO kb_uploads(workspace, kb_id, doc_id, job_id, bytes) "
          "VALUES($1, $2, $3, $4, $5)",
          {doc.workspace, doc.kb_id, doc.id, doc.job_id, SqlValue::Bytes(doc.upload)})
      .status();
}

Result<std::string> Upload(SqlTxn& txn, std::string_view workspace, std::string_view kb_id,
                           std::string_view id, std::string_view job_id) {
  return txn.QueryOne<std::string>(
      "SELECT bytes FROM kb_uploads WHERE workspace = $1 AND kb_id = $2 AND doc_id = $3 AND "
      "job_id = $4",
      {workspace, kb_id, id, job_id}, [](const RowReader& r) { return r.Bytes(0); },
      UploadGone(id));
}

Result<bool> Finish(SqlTxn& txn, const KbDocRecord& doc, const std::vector<KbChunkRecord>& chunks) {
  Result<int64_t> ended = txn.Exec(
      "UPDATE kb_docs SET status = $1, content = $2, error_message = $3, updated_at = $4 "
      "WHERE workspace = $5 AND kb_id = $6 AND id = $7 AND job_id = $8 AND " +
          job_rows::UnfinishedCondition(kDocWords),
      {job_rows::StoredWord(doc.status, kDocWords), doc.content, doc.error_message,
       doc.updated_at_us, doc.workspace, doc.kb_id, doc.id, doc.job_id});
  if (!ended.ok()) return ended.status();
  if (*ended == 0) return false;  // deleted or uploaded again meanwhile
  ENGRAM_RETURN_IF_ERROR(DeleteDocData(txn, doc.workspace, doc.kb_id, doc.id).status());
  ENGRAM_RETURN_IF_ERROR(InsertChunks(txn, doc, chunks));
  return true;
}

Result<KbDocRecord> Get(SqlTxn& txn, std::string_view workspace, std::string_view kb_id,
                        std::string_view id) {
  return txn.QueryOne<KbDocRecord>(
      fmt::format("SELECT {}, content FROM kb_docs WHERE workspace = $1 AND kb_id = $2 AND id = $3",
                  kb_rows::kDocColumns),
      {workspace, kb_id, id},
      [](const RowReader& r) { return kb_rows::ReadDocRow(r, /*with_content=*/true); },
      DocNotFound(kb_id, id));
}

Result<std::vector<KbDocRecord>> List(SqlTxn& txn, std::string_view workspace,
                                      std::string_view kb_id, size_t offset, size_t limit,
                                      size_t* total) {
  *total = 0;
  Result<size_t> count = Count(
      txn, "SELECT count(*) FROM kb_docs WHERE workspace = $1 AND kb_id = $2", {workspace, kb_id});
  if (!count.ok()) return count.status();
  Result<std::vector<KbDocRecord>> docs = txn.QueryAll<KbDocRecord>(
      fmt::format("SELECT {} FROM kb_docs WHERE workspace = $1 AND kb_id = $2 "
                  "ORDER BY created_at DESC, id {} LIMIT $3 OFFSET $4",
                  kb_rows::kDocColumns, txn.ByteCollation()),
      {workspace, kb_id, SqlRowBound(limit), SqlRowBound(offset)},
      [](const RowReader& r) { return kb_rows::ReadDocRow(r, /*with_content=*/false); });
  if (docs.ok()) *total = *count;
  return docs;
}

Result<std::vector<KnowledgeBaseSummary>> ListBases(SqlTxn& txn, std::string_view workspace,
                                                    size_t offset, size_t limit, size_t* total) {
  *total = 0;
  Result<size_t> count =
      Count(txn, "SELECT count(DISTINCT kb_id) FROM kb_docs WHERE workspace = $1", {workspace});
  if (!count.ok()) return count.status();
  Result<std::vector<KnowledgeBaseSummary>> bases = txn.QueryAll<KnowledgeBaseSummary>(
      fmt::format("SELECT {} FROM kb_docs WHERE workspace = $1 GROUP BY kb_id "
                  "ORDER BY kb_id {} LIMIT $2 OFFSET $3",
                  kb_rows::SummaryColumns(), txn.ByteCollation()),
      {workspace, SqlRowBound(limit), SqlRowBound(offset)}, [](const RowReader& r) {
        return KnowledgeBaseSummary{.kb_id = r.Text(0),
                                    .documents = r.Int(1),
                                    .processing = r.Int(2),
                                    .failed = r.Int(3),
                                    .updated_at_us = r.Int(4)};
      });
  if (bases.ok()) *total = *count;
  return bases;
}

Result<Deleted> Delete(SqlTxn& txn, std::string_view workspace, std::string_view kb_id,
                       std::string_view id) {
  Result<int64_t> doc =
      txn.Exec("DELETE FROM kb_docs WHERE workspace = $1 AND kb_id = $2 AND id = $3",
               {workspace, kb_id, id});
  if (!doc.ok()) return doc.status();
  Result<int64_t> data = DeleteDocData(txn, workspace, kb_id, id);
  if (!data.ok()) return data.status();
  return Deleted{.document = *doc > 0, .rows = *doc + *data};
}

Result<std::vector<KbChunkRecord>> Chunks(SqlTxn& txn, std::string_view workspace,
                                          std::string_view kb_id) {
  return txn.QueryAll<KbChunkRecord>(
      fmt::format("SELECT c.doc_id, c.position, c.heading, c.text, c.vector_model, c.vector, "
                  "d.title FROM kb_chunks c JOIN kb_docs d ON d.workspace = c.workspace AND "
                  "d.kb_id = c.kb_id AND d.id = c.doc_id WHERE c.workspace = $1 AND c.kb_id = $2 "
                  "ORDER BY c.doc_id {}, c.position",
                  txn.ByteCollation()),
      {workspace, kb_id}, ReadChunkRow);
}

}  // namespace engram::kb_sql
