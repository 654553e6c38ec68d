// PgStore: knowledge-base documents (which double as their ingestion jobs) and their chunks.
// The statements and rules are kb_sql.h's, as SQLite runs them; in addition every write checks
// its text for NUL bytes and bumps the knowledge base's scope version first (serialising its
// writers across nodes), and PROCESSING documents carry a lease (see pg_store.h).
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
#include "store/kb_sql.h"
#include "store/pg_rows.h"
#include "store/pg_sql_txn.h"
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

}  // namespace

Status PgStore::PutKbDoc(const KbDocRecord& doc) {
  ENGRAM_RETURN_IF_ERROR(CheckUploadText(doc));
  return pool_->Write([&](pqxx::work& t) -> Status {
    pg::BumpScopeVersion(t, ScopeKeyKb(doc.workspace, doc.kb_id));
    // The ingestion is this node's while it renews the lease; another node takes it over after.
    const int64_t lease_until = pg::DbNowMicros(t) + lease_us();
    pg::PgTxn txn(t);
    return kb_sql::Put(txn, doc, {{"lease_owner", "lease_until"}, {options_.node_id, lease_until}});
  });
}

Result<std::string> PgStore::GetKbUpload(std::string_view workspace, std::string_view kb_id,
                                         std::string_view id, std::string_view job_id) {
  if (HasNul(workspace) || HasNul(kb_id) || HasNul(id) || HasNul(job_id)) {
    return kb_sql::UploadGone(id);
  }
  return Read([&](SqlTxn& txn) { return kb_sql::Upload(txn, workspace, kb_id, id, job_id); });
}

Result<bool> PgStore::FinishKbDoc(const KbDocRecord& doc,
                                  const std::vector<KbChunkRecord>& chunks) {
  ENGRAM_RETURN_IF_ERROR(CheckFinishText(doc));
  for (const KbChunkRecord& c : chunks) {
    ENGRAM_RETURN_IF_ERROR(CheckText(
        {{c.heading, "chunk heading"}, {c.text, "chunk text"}, {c.vector_model, "chunk model"}}));
  }
  bool stale = false;
  Status st = pool_->Write([&](pqxx::work& t) -> Status {
    stale = false;
    pg::BumpScopeVersion(t, ScopeKeyKb(doc.workspace, doc.kb_id));
    pg::PgTxn txn(t);
    Result<bool> ended = kb_sql::Finish(txn, doc, chunks);
    if (!ended.ok()) return ended.status();
    if (*ended) return Status::Ok();
    stale = true;  // deleted or uploaded again meanwhile
    return pg::NothingChanged();
  });
  if (stale) return false;
  if (!st.ok()) return st;
  return true;
}

Result<KbDocRecord> PgStore::GetKbDoc(std::string_view workspace, std::string_view kb_id,
                                      std::string_view id) {
  if (HasNul(workspace) || HasNul(kb_id) || HasNul(id)) return kb_sql::DocNotFound(kb_id, id);
  return Read([&](SqlTxn& txn) { return kb_sql::Get(txn, workspace, kb_id, id); });
}

Result<std::vector<KbDocRecord>> PgStore::ListKbDocs(std::string_view workspace,
                                                     std::string_view kb_id, size_t offset,
                                                     size_t limit, size_t* total) {
  *total = 0;
  if (HasNul(workspace) || HasNul(kb_id)) return std::vector<KbDocRecord>{};  // never written
  return Read(
      [&](SqlTxn& txn) { return kb_sql::List(txn, workspace, kb_id, offset, limit, total); });
}

Result<std::vector<KnowledgeBaseSummary>> PgStore::ListKnowledgeBases(std::string_view workspace,
                                                                      size_t offset, size_t limit,
                                                                      size_t* total) {
  *total = 0;
  if (HasNul(workspace)) return std::vector<KnowledgeBaseSummary>{};  // never written
  return Read([&](SqlTxn& txn) { return kb_sql::ListBases(txn, workspace, offset, limit, total); });
}

Result<bool> PgStore::DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                                  std::string_view id) {
  if (HasNul(workspace) || HasNul(kb_id) || HasNul(id)) return false;
  bool deleted = false;
  bool unchanged = false;
  Status st = pool_->Write([&](pqxx::work& t) -> Status {
    deleted = unchanged = false;
    pg::BumpScopeVersion(t, ScopeKeyKb(workspace, kb_id));
    pg::PgTxn txn(t);
    Result<kb_sql::Deleted> r = kb_sql::Delete(txn, workspace, kb_id, id);
    if (!r.ok()) return r.status();
    deleted = r->document;
    if (r->rows > 0) return Status::Ok();
    unchanged = true;
    return pg::NothingChanged();
  });
  if (unchanged) return false;
  if (!st.ok()) return st;
  return deleted;
}

Result<std::vector<KbChunkRecord>> PgStore::LoadKbChunks(std::string_view workspace,
                                                         std::string_view kb_id) {
  if (HasNul(workspace) || HasNul(kb_id)) return std::vector<KbChunkRecord>{};
  return Read([&](SqlTxn& txn) { return kb_sql::Chunks(txn, workspace, kb_id); });
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
