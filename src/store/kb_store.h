// KbStore: knowledge-base documents (each one also its ingestion job, resumed after a restart) and
// the searchable chunks their ingestion cuts them into (sqlite_kb.cc, pg_kb.cc).
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/kb_types.h"
#include "store/scope_sync.h"

namespace engram {

class KbStore : public virtual ScopeSync {
 public:
  // Stores a document as PROCESSING, replacing the one with its id and deleting that one's chunks
  // and uploaded bytes; a non-empty doc.upload is kept, in the same transaction, until the job
  // ends.
  virtual Status PutKbDoc(const KbDocRecord& doc) = 0;
  // The bytes uploaded with the document's job `job_id`; kNotFound when there are none (the job
  // ended, or the document was deleted or uploaded again).
  virtual Result<std::string> GetKbUpload(std::string_view workspace, std::string_view kb_id,
                                          std::string_view id, std::string_view job_id) = 0;
  // Ends an ingestion job: doc.status kSucceeded (with content and chunks) or kFailed
  // (error_message), at doc.updated_at_us (the caller's clock: when it ended), and deletes its
  // uploaded bytes. Writes nothing and returns false when the document was deleted or uploaded
  // again since (its job_id differs).
  virtual Result<bool> FinishKbDoc(const KbDocRecord& doc,
                                   const std::vector<KbChunkRecord>& chunks) = 0;
  // kNotFound when the knowledge base has no such document.
  virtual Result<KbDocRecord> GetKbDoc(std::string_view workspace, std::string_view kb_id,
                                       std::string_view id) = 0;
  // Newest first, without content; `total` gets the document count.
  virtual Result<std::vector<KbDocRecord>> ListKbDocs(std::string_view workspace,
                                                      std::string_view kb_id, size_t offset,
                                                      size_t limit, size_t* total) = 0;
  // The workspace's knowledge bases by kb_id (bytewise): [offset, offset + limit) of them; `total`
  // gets their count.
  virtual Result<std::vector<KnowledgeBaseSummary>> ListKnowledgeBases(std::string_view workspace,
                                                                       size_t offset, size_t limit,
                                                                       size_t* total) = 0;
  // Deletes a document and its chunks; false when there was none.
  virtual Result<bool> DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                                   std::string_view id) = 0;
  // Every chunk of a knowledge base, by document and position.
  virtual Result<std::vector<KbChunkRecord>> LoadKbChunks(std::string_view workspace,
                                                          std::string_view kb_id) = 0;
  // Documents still PROCESSING (a restart resumes them), oldest first.
  virtual Result<std::vector<KbDocRecord>> UnfinishedKbDocs() = 0;
};

}  // namespace engram
