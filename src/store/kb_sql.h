// Knowledge-base documents (which double as their ingestion jobs), their uploaded bytes and their
// chunks: every statement and rule of the knowledge-base tables, written once over SqlTxn
// (sql_txn.h) for both stores. A store runs these in its own transaction and adds only what is
// its own: PostgreSQL checks text for NUL bytes first, serialises a knowledge base's writers on
// its scope version and leases PROCESSING documents to nodes. Internal to store/.
//
// Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "store/kb_types.h"
#include "store/sql_txn.h"

namespace engram::kb_sql {

// The answers for a document or an upload that is not there.
Status DocNotFound(std::string_view kb_id, std::string_view id);
Status UploadGone(std::string_view id);

// Writes a new upload of the document (replacing any earlier one, its chunks and its bytes); its
// content is empty until the job ends. `extra`: PostgreSQL's lease columns.
Status Put(SqlTxn& txn, const KbDocRecord& doc, const ExtraColumns& extra = {});
// The bytes upload `job_id` of the document sent; kNotFound once its job ended or was replaced.
Result<std::string> Upload(SqlTxn& txn, std::string_view workspace, std::string_view kb_id,
                           std::string_view id, std::string_view job_id);
// Ends the document's job `doc.job_id` with `doc`'s status, content and error, replacing its
// chunks: false (nothing written) when the document was deleted or uploaded again meanwhile.
Result<bool> Finish(SqlTxn& txn, const KbDocRecord& doc, const std::vector<KbChunkRecord>& chunks);
Result<KbDocRecord> Get(SqlTxn& txn, std::string_view workspace, std::string_view kb_id,
                        std::string_view id);
// Newest first, ties by id in byte order; without content. `total` gets their count.
Result<std::vector<KbDocRecord>> List(SqlTxn& txn, std::string_view workspace,
                                      std::string_view kb_id, size_t offset, size_t limit,
                                      size_t* total);
// By kb_id in byte order. `total` gets their count.
Result<std::vector<KnowledgeBaseSummary>> ListBases(SqlTxn& txn, std::string_view workspace,
                                                    size_t offset, size_t limit, size_t* total);

struct Deleted {
  bool document = false;  // the document's row
  int64_t rows = 0;       // every row that went: the document's, its chunks', its upload's
};
Result<Deleted> Delete(SqlTxn& txn, std::string_view workspace, std::string_view kb_id,
                       std::string_view id);
// Every chunk of the knowledge base with its document's title, by document (byte order), then
// position.
Result<std::vector<KbChunkRecord>> Chunks(SqlTxn& txn, std::string_view workspace,
                                          std::string_view kb_id);

}  // namespace engram::kb_sql
