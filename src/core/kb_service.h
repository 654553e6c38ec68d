// KbService: knowledge-base documents (docs/api/README.md "Knowledge bases") over the
// store, a DocFetcher, the document extractors and chunker, an Embedder and per-KB KbShards.
//
// Ingestion of an upload (the API answers after step 1):
//   1. the document row is stored PROCESSING with a new job_id (durable: fsynced), replacing a
//      document of the same id, whose chunks leave the store and search at once; bytes uploaded
//      with the request (CONTENT) are stored in the same transaction; the job is queued;
//   2. a worker fetches the bytes (CONTENT: from the store), detects the type from the content,
//   extracts the text, chunks it
//      and embeds the chunks;
//   3. SUCCESS (content + chunks) or FAIL (error_message) commits in one transaction, guarded by
//      the job_id, so a job whose document was deleted or uploaded again meanwhile writes nothing;
//      then the chunks enter the shard. A crash leaves the row PROCESSING and Start() runs the job
//      again after the restart; a commit that fails for a moment (a dropped connection, a full
//      disk) runs the job again after a short pause, and an end the store refuses (text it
//      cannot hold) is stored as FAIL.
// Store writes and shard updates of one document are serialised by a striped per-document lock,
// so the shard always ends in the store's state. Each write holds its shard from before its store
// commit until the shard is updated, so a memory budget (core/shard_budget.h) never drops the
// shard in between; a shard it dropped while idle is loaded again, from the store, on next use.
//
// Logs carry ids, sizes and timings only, never document content or queries.
// Thread-safety: all public methods are safe to call concurrently. Does not own the store,
// analyzer, embedder, fetcher or budget.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "core/job_queue.h"
#include "core/kb_shard.h"
#include "core/shard_budget.h"
#include "core/shard_cache.h"
#include "embed/embedder.h"
#include "extract/documents/chunker.h"
#include "extract/documents/doc_fetcher.h"
#include "extract/documents/document_text.h"
#include "index/analyzer.h"
#include "store/kb_store.h"

namespace engram {

struct KbServiceOptions {
  KbShardOptions shard;
  ChunkOptions chunks;
  DocumentLimits documents;
  int workers = 1;           // ingestion threads (parsing and embedding are CPU-bound)
  size_t max_queued = 1000;  // more queued documents → 429 until workers catch up
  size_t embed_batch = 32;   // chunks per embedding call
  // Shared stores: how often to claim documents of nodes whose lease ran out.
  std::chrono::milliseconds job_poll_interval{2000};
  // The memory budget shared with the other shard caches; null: shards are never dropped. Not
  // owned; it must outlive the service.
  ShardBudget* budget = nullptr;
  // Where the knowledge bases' shards keep their vector graphs between loads ("": not kept).
  std::string graph_dir;
  // Row stamps (document times); null: RealClock(). Not owned; it must outlive the service.
  const Clock* clock = nullptr;
};

struct KbUploadRequest {
  std::string workspace;
  std::string kb_id;
  DocSourceType type = DocSourceType::kLocal;
  std::string id;  // empty: a d-<uuid> is generated
  std::string title;
  std::string file_url;  // with `content`: the file name (its extension helps type detection)
  // Set: the document's bytes came with the request (source_type CONTENT; `type` is ignored),
  // and the store keeps them until the ingestion ends.
  std::optional<std::string> content;
};

class KbService {
 public:
  // `embedder` may be null (BM25 only).
  KbService(KbStore* store, const Analyzer* analyzer, const Embedder* embedder,
            const DocFetcher* fetcher, KbServiceOptions options);
  ~KbService();  // Shutdown()

  // Queues every PROCESSING document of the store and starts the workers.
  Status Start();
  // Stops the workers after their current document; queued ones stay PROCESSING in the store.
  void Shutdown();
  // Saves the vector graph of every loaded knowledge base (at a clean stop, so the next start's
  // loads take them back); logs what it saved.
  void SaveGraphs();

  // Stores the document as PROCESSING and queues its ingestion; returns its id. Errors:
  // kInvalidParameter for a source that can never be read (see DocFetcher::Validate),
  // kThrottled when too many documents are queued.
  Result<std::string> Upload(const KbUploadRequest& request);
  Result<KbDocRecord> Get(const std::string& workspace, const std::string& kb_id,
                          const std::string& id);
  // Newest first; page_number from 1.
  Result<std::vector<KbDocRecord>> List(const std::string& workspace, const std::string& kb_id,
                                        size_t page_number, size_t page_size, size_t* total);
  // The workspace's knowledge bases by kb_id, with their documents counted by status (as stored:
  // a document whose ingestion is ending may count as done a moment before its GET says so).
  Result<std::vector<KnowledgeBaseSummary>> ListKnowledgeBases(const std::string& workspace,
                                                               size_t page_number, size_t page_size,
                                                               size_t* total);
  // kNotFound for an unknown document.
  Status Delete(const std::string& workspace, const std::string& kb_id, const std::string& id);
  // `explain`: each hit says how it got its score (KbHit::explain).
  Result<std::vector<KbHit>> Search(const std::string& workspace, const std::string& kb_id,
                                    const std::string& query, size_t top_k, bool explain = false);
  // The non-blocking probe: whether the knowledge base's shard is resident and loaded, so a search
  // of it answers without loading from the store. Takes only the cache's lock, briefly; an HTTP I/O
  // thread asks it before a search and leaves a cold knowledge base to a worker. (On a shared store
  // searches run on workers: one reads the version from the store first.)
  bool KnowledgeBaseLoaded(const std::string& workspace, const std::string& kb_id) const;

  // Documents waiting for a worker plus those being ingested.
  size_t queued_jobs() const;

 private:
  Result<std::shared_ptr<KbShard>> Shard(const std::string& workspace, const std::string& kb_id);
  Mutex& DocLock(const std::string& workspace, const std::string& kb_id, const std::string& id);
  void RunJob(KbDocRecord doc);
  // Queues `doc`'s ingestion again to run after a short pause: its end could not be stored.
  // Holds no worker meanwhile.
  void RetryLater(KbDocRecord doc);
  // Shared stores: queues the documents of dead nodes that the store hands to this node.
  void ClaimOrphanedDocs();
  // Fetch → detect → extract → chunk → embed. The text goes to *content.
  Result<std::vector<KbChunkRecord>> Ingest(const KbDocRecord& doc, std::string* content);

  KbStore* store_;
  const Analyzer* analyzer_;
  const Embedder* embedder_;
  const DocFetcher* fetcher_;
  KbServiceOptions options_;
  const Clock* const clock_;  // options_.clock, or RealClock()

  ShardCache<KbShard> shards_;  // keyed "workspace<US>kb_id", under options_.budget

  static constexpr size_t kStripes = 64;
  std::array<Mutex, kStripes> doc_locks_;

  mutable Mutex running_mu_;
  bool started_ GUARDED_BY(running_mu_) = false;
  // Documents whose end state is being committed and put into the shard ("ws\x1fkb\x1fid"):
  // reported PROCESSING until both are done, so a client that sees SUCCESS finds the chunks.
  std::set<std::string> finishing_ GUARDED_BY(running_mu_);
  // Declared last: destroyed (workers joined) before the members the jobs use.
  JobQueue<KbDocRecord> jobs_;

  std::string FinishingKey(const std::string& workspace, const std::string& kb_id,
                           const std::string& id) const {
    return workspace + '\x1f' + kb_id + '\x1f' + id;
  }
  void MaskFinishing(KbDocRecord& doc) const;
};

}  // namespace engram
