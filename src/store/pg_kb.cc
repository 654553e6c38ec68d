// PgStore: knowledge-base documents (which double as their ingestion jobs) and their chunks.
// Behaves as sqlite_kb.cc; in addition every write bumps the knowledge base's scope version first
// (serialising its writers across nodes) and PROCESSING documents carry a lease (see pg_store.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <tuple>
#include <utility>

#include "common/codec.h"
#include "common/time_util.h"
#include "store/job_rows.h"
#include "store/kb_rows.h"
#include "store/pg_rows.h"
#include "store/pg_store.h"
#include "store/row_bounds.h"

namespace engram {

namespace {

using pg::CheckText;
using pg::HasNul;

constexpr JobVocabulary kDocWords = JobVocabulary::kKbDocument;

// The keys and what a job's end writes.
Status CheckFinishText(const KbDocRecord& d) {
  return CheckText({{d.workspace, "workspace"},
                    {d.kb_id, "kb_id"},
                    {d.id, "document id"},
                    {d.job_id, "document job_id"},
                    {d.content, "document content"},
                    {d.error_message, "document error_message"}});
}

// Everything an upload writes (its content is always empty).
Status CheckUploadText(const KbDocRecord& d) {
  return CheckText({{d.workspace, "workspace"},
                    {d.kb_id, "kb_id"},
                    {d.id, "document id"},
                    {d.job_id, "document job_id"},
                    {d.title, "document title"},
                    {d.source_type, "document source_type"},
                    {d.file_url, "document file_url"},
                    {d.error_message, "document error_message"}});
}

// A float32 vector in bytea's text input form (\x + hex), the same bytes as pg::VectorBytes.
std::string VectorHex(const std::vector<float>& v) {
  return "\\x" + HexEncode(FloatVectorBytes(v));
}

// Deletes what a document's upload or ingestion left beside its row: its chunks and its uploaded
// bytes (every write that replaces, ends or deletes a document starts over from none). Returns
// how many rows went.
size_t DeleteDocData(pqxx::work& txn, const std::string& workspace, const std::string& kb_id,
                     const std::string& doc_id) {
  size_t rows = 0;
  for (const char* table : {"kb_chunks", "kb_uploads"}) {
    rows += txn.exec_params(fmt::format("DELETE FROM {} WHERE workspace = $1 AND kb_id = $2 AND "
                                        "doc_id = $3",
                                        table),
                            workspace, kb_id, doc_id)
                .affected_rows();
  }
  return rows;
}

// Inserts a document's chunks a few hundred rows per statement rather than one round trip each:
// the knowledge base's scope lock is held meanwhile. Parameters go as text (the vector in bytea's
// hex form) so one dynamic list can carry them.
void InsertChunks(pqxx::work& txn, const KbDocRecord& doc,
                  const std::vector<KbChunkRecord>& chunks) {
  constexpr size_t kRowsPerStatement = 500;  // 5 parameters a row, far below libpq's 65535
  for (size_t begin = 0; begin < chunks.size(); begin += kRowsPerStatement) {
    const size_t end = std::min(chunks.size(), begin + kRowsPerStatement);
    std::string sql =
        "INSERT INTO kb_chunks(workspace, kb_id, doc_id, position, heading, text, vector_model, "
        "vector) VALUES ";
    std::vector<std::optional<std::string>> values = {doc.workspace, doc.kb_id, doc.id};
    for (size_t i = begin; i < end; ++i) {
      const KbChunkRecord& c = chunks[i];
      const size_t p = values.size();  // parameters are numbered from 1
      fmt::format_to(std::back_inserter(sql), "{}($1, $2, $3, ${}, ${}, ${}, ${}, ${})",
                     i == begin ? "" : ", ", p + 1, p + 2, p + 3, p + 4, p + 5);
      values.push_back(std::to_string(c.position));
      values.push_back(c.heading);
      values.push_back(c.text);
      values.push_back(c.vector_model);
      values.push_back(c.vector.empty() ? std::nullopt
                                        : std::optional<std::string>(VectorHex(c.vector)));
    }
    std::vector<const char*> params;  // nullptr = SQL NULL
    params.reserve(values.size());
    for (const auto& v : values) params.push_back(v ? v->c_str() : nullptr);
    txn.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
  }
}

}  // namespace

Status PgStore::PutKbDoc(const KbDocRecord& doc) {
  ENGRAM_RETURN_IF_ERROR(CheckUploadText(doc));
  return pool_->Write([&](pqxx::work& txn) -> Status {
    pg::BumpScopeVersion(txn, ScopeKeyKb(doc.workspace, doc.kb_id));
    DeleteDocData(txn, doc.workspace, doc.kb_id, doc.id);
    // The ingestion is this node's while it renews the lease; another node takes it over after.
    const int64_t lease_until = pg::DbNowMicros(txn) + lease_us();
    txn.exec_params(
        fmt::format(
            "INSERT INTO kb_docs({}, content, lease_owner, lease_until) "
            "VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '', $12, $13) "
            "ON CONFLICT (workspace, kb_id, id) DO UPDATE SET job_id = EXCLUDED.job_id, "
            "title = EXCLUDED.title, source_type = EXCLUDED.source_type, "
            "file_url = EXCLUDED.file_url, status = EXCLUDED.status, "
            "error_message = EXCLUDED.error_message, created_at = EXCLUDED.created_at, "
            "updated_at = EXCLUDED.updated_at, content = '', lease_owner = EXCLUDED.lease_owner, "
            "lease_until = EXCLUDED.lease_until",
            kb_rows::kDocColumns),
        doc.workspace, doc.kb_id, doc.id, doc.job_id, doc.title, doc.source_type, doc.file_url,
        job_rows::StoredWord(doc.status, kDocWords), doc.error_message, doc.created_at_us,
        doc.updated_at_us, options_.node_id, lease_until);
    if (!doc.upload.empty()) {
      txn.exec_params(
          "INSERT INTO kb_uploads(workspace, kb_id, doc_id, job_id, bytes) "
          "VALUES($1, $2, $3, $4, $5)",
          doc.workspace, doc.kb_id, doc.id, doc.job_id, pqxx::binarystring(doc.upload));
    }
    return Status::Ok();
  });
}

Result<std::string> PgStore::GetKbUpload(std::string_view workspace, std::string_view kb_id,
                                         std::string_view id, std::string_view job_id) {
  std::optional<std::string> found;
  if (!HasNul(workspace) && !HasNul(kb_id) && !HasNul(id) && !HasNul(job_id)) {
    Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
      found.reset();
      pqxx::result res = txn.exec_params(
          "SELECT bytes FROM kb_uploads WHERE workspace = $1 AND kb_id = $2 AND doc_id = $3 AND "
          "job_id = $4",
          std::string(workspace), std::string(kb_id), std::string(id), std::string(job_id));
      if (!res.empty()) found = pqxx::binarystring(res[0][0]).str();
      return Status::Ok();
    });
    if (!st.ok()) return st;
  }
  if (!found) {
    return Status::NotFound(fmt::format("the uploaded bytes of document {} are gone", id));
  }
  return std::move(*found);
}

Result<bool> PgStore::FinishKbDoc(const KbDocRecord& doc,
                                  const std::vector<KbChunkRecord>& chunks) {
  ENGRAM_RETURN_IF_ERROR(CheckFinishText(doc));
  for (const KbChunkRecord& c : chunks) {
    ENGRAM_RETURN_IF_ERROR(CheckText(
        {{c.heading, "chunk heading"}, {c.text, "chunk text"}, {c.vector_model, "chunk model"}}));
  }
  bool stale = false;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    stale = false;
    pg::BumpScopeVersion(txn, ScopeKeyKb(doc.workspace, doc.kb_id));
    pqxx::result up = txn.exec_params(
        "UPDATE kb_docs SET status = $1, content = $2, error_message = $3, updated_at = $4 "
        "WHERE workspace = $5 AND kb_id = $6 AND id = $7 AND job_id = $8 AND " +
            job_rows::UnfinishedCondition(kDocWords),
        job_rows::StoredWord(doc.status, kDocWords), doc.content, doc.error_message,
        doc.updated_at_us, doc.workspace, doc.kb_id, doc.id, doc.job_id);
    if (up.affected_rows() == 0) {  // deleted or uploaded again meanwhile
      stale = true;
      return pg::NothingChanged();
    }
    DeleteDocData(txn, doc.workspace, doc.kb_id, doc.id);
    InsertChunks(txn, doc, chunks);
    return Status::Ok();
  });
  if (stale) return false;
  if (!st.ok()) return st;
  return true;
}

Result<KbDocRecord> PgStore::GetKbDoc(std::string_view workspace, std::string_view kb_id,
                                      std::string_view id) {
  std::optional<KbDocRecord> found;
  if (!HasNul(workspace) && !HasNul(kb_id) && !HasNul(id)) {
    Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
      found.reset();
      pqxx::result res = txn.exec_params(
          fmt::format("SELECT {}, content FROM kb_docs WHERE workspace = $1 AND kb_id = $2 AND "
                      "id = $3",
                      kb_rows::kDocColumns),
          std::string(workspace), std::string(kb_id), std::string(id));
      if (!res.empty()) found = kb_rows::ReadDocRow(pg::ResultRow(res[0]), /*with_content=*/true);
      return Status::Ok();
    });
    if (!st.ok()) return st;
  }
  if (!found) {
    return Status::NotFound(fmt::format("document {} not found in knowledge base {}", id, kb_id));
  }
  return std::move(*found);
}

Result<std::vector<KbDocRecord>> PgStore::ListKbDocs(std::string_view workspace,
                                                     std::string_view kb_id, size_t offset,
                                                     size_t limit, size_t* total) {
  std::vector<KbDocRecord> out;
  *total = 0;
  if (HasNul(workspace) || HasNul(kb_id)) return out;
  size_t count = 0;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    const std::string ws(workspace), kb(kb_id);
    count = txn.exec_params1("SELECT COUNT(*) FROM kb_docs WHERE workspace = $1 AND kb_id = $2", ws,
                             kb)[0]
                .as<size_t>();
    // COLLATE "C": ties break by bytes, as in SQLite, whatever the database's collation.
    pqxx::result res =
        txn.exec_params(fmt::format("SELECT {} FROM kb_docs WHERE workspace = $1 AND kb_id = $2 "
                                    "ORDER BY created_at DESC, id COLLATE \"C\" LIMIT $3 OFFSET $4",
                                    kb_rows::kDocColumns),
                        ws, kb, SqlRowBound(limit), SqlRowBound(offset));
    out.reserve(res.size());
    for (const auto& row : res)
      out.push_back(kb_rows::ReadDocRow(pg::ResultRow(row), /*with_content=*/false));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  *total = count;
  return out;
}

Result<std::vector<KnowledgeBaseSummary>> PgStore::ListKnowledgeBases(std::string_view workspace,
                                                                      size_t offset, size_t limit,
                                                                      size_t* total) {
  std::vector<KnowledgeBaseSummary> out;
  *total = 0;
  if (HasNul(workspace)) return out;  // never written
  size_t count = 0;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    const std::string ws(workspace);
    count =
        txn.exec_params1("SELECT count(DISTINCT kb_id) FROM kb_docs WHERE workspace = $1", ws)[0]
            .as<size_t>();
    // COLLATE "C": by bytes, as in SQLite, whatever the database's collation.
    pqxx::result res =
        txn.exec_params(fmt::format("SELECT {} FROM kb_docs WHERE workspace = $1 GROUP BY kb_id "
                                    "ORDER BY kb_id COLLATE \"C\" LIMIT $2 OFFSET $3",
                                    kb_rows::SummaryColumns()),
                        ws, SqlRowBound(limit), SqlRowBound(offset));
    for (const auto& r : res) {
      out.push_back({.kb_id = r[0].as<std::string>(),
                     .documents = r[1].as<int64_t>(),
                     .processing = r[2].as<int64_t>(),
                     .failed = r[3].as<int64_t>(),
                     .updated_at_us = r[4].as<int64_t>()});
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  *total = count;
  return out;
}

Result<bool> PgStore::DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                                  std::string_view id) {
  if (HasNul(workspace) || HasNul(kb_id) || HasNul(id)) return false;
  const std::string ws(workspace), kb(kb_id), doc_id(id);
  bool deleted = false;
  bool unchanged = false;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    deleted = unchanged = false;
    pg::BumpScopeVersion(txn, ScopeKeyKb(ws, kb));
    pqxx::result del = txn.exec_params(
        "DELETE FROM kb_docs WHERE workspace = $1 AND kb_id = $2 AND id = $3", ws, kb, doc_id);
    deleted = del.affected_rows() > 0;
    if (DeleteDocData(txn, ws, kb, doc_id) == 0 && !deleted) {
      unchanged = true;
      return pg::NothingChanged();
    }
    return Status::Ok();
  });
  if (unchanged) return false;
  if (!st.ok()) return st;
  return deleted;
}

Result<std::vector<KbChunkRecord>> PgStore::LoadKbChunks(std::string_view workspace,
                                                         std::string_view kb_id) {
  std::vector<KbChunkRecord> out;
  if (HasNul(workspace) || HasNul(kb_id)) return out;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    // COLLATE "C": documents in byte order, as in SQLite, whatever the database's collation.
    pqxx::result res = txn.exec_params(
        "SELECT c.doc_id, c.position, c.heading, c.text, c.vector_model, c.vector, d.title "
        "FROM kb_chunks c JOIN kb_docs d ON d.workspace = c.workspace AND d.kb_id = c.kb_id "
        "AND d.id = c.doc_id WHERE c.workspace = $1 AND c.kb_id = $2 "
        "ORDER BY c.doc_id COLLATE \"C\", c.position",
        std::string(workspace), std::string(kb_id));
    out.reserve(res.size());
    for (const auto& row : res) {
      KbChunkRecord c;
      c.doc_id = row[0].as<std::string>();
      c.position = row[1].as<int32_t>();
      c.heading = row[2].as<std::string>();
      c.text = row[3].as<std::string>();
      c.vector_model = row[4].as<std::string>();
      c.vector = pg::VectorFromField(row[5]);
      c.title = row[6].as<std::string>();
      out.push_back(std::move(c));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<KbDocRecord>> PgStore::UnfinishedKbDocs() {
  std::vector<KbDocRecord> out;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    out.clear();
    // Claims the PROCESSING documents no live node holds: never claimed, or their node stopped
    // renewing the lease. SKIP LOCKED lets nodes claiming at once share them out instead of
    // waiting.
    const int64_t now = pg::DbNowMicros(txn);
    pqxx::result res = txn.exec_params(
        fmt::format("UPDATE kb_docs SET lease_owner = $1, lease_until = $2 "
                    "WHERE (workspace, kb_id, id) IN (SELECT workspace, kb_id, id FROM kb_docs "
                    "WHERE {} AND lease_until < $3 ORDER BY created_at "
                    "LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING {}",
                    job_rows::UnfinishedCondition(kDocWords), kb_rows::kDocColumns),
        options_.node_id, now + lease_us(), now);
    out.reserve(res.size());
    for (const auto& row : res)
      out.push_back(kb_rows::ReadDocRow(pg::ResultRow(row), /*with_content=*/false));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  // RETURNING follows no order; callers resume oldest first.
  std::sort(out.begin(), out.end(), [](const KbDocRecord& a, const KbDocRecord& b) {
    return std::tie(a.created_at_us, a.workspace, a.kb_id, a.id) <
           std::tie(b.created_at_us, b.workspace, b.kb_id, b.id);
  });
  return out;
}

}  // namespace engram
