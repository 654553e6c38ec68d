// MemoryService: the Agentic Memory V4 memories (docs/api/README.md section 1) over the store, the
// per-workspace MemoryShards, an Embedder and a MemoryExtractor.
//
// Write path of an add (the API answers after step 1):
//   1. the validated request is stored as a PENDING event row (durable: fsynced) and queued;
//   2. a worker takes it (RUNNING, known in memory only), extracts facts (or takes the messages
//   verbatim when
//      infer = false), finds each fact's most similar memories of the same scope, asks the
//      extractor for ADD / UPDATE / DELETE / NONE decisions, embeds the new texts and tags the
//      new and updated memories with categories (their vectors against the categories', see
//      extract/memory_categorizer.h; none without an embedder);
//   3. the memory changes, their history rows and the event's end state commit in one transaction,
//      then the shard is updated. A failure (extractor, embedder) ends the event FAILED with an
//      error message and changes nothing; a crash before step 3 leaves the event PENDING/RUNNING
//      in the store, and Start() runs it again after the restart.
// Events of one scope (user_id, agent_id, run_id, app_id) run one at a time, and direct updates and
// deletes of its memories take the same lock, so two identical adds never both ADD.
//
// Shards are caches of the store: under a memory budget (core/shard_budget.h) an idle workspace's
// shard may be dropped and is loaded again on its next use. Every write holds its shard from
// before its store commit until the shard is updated, so the shard cannot be dropped in between;
// a later load reads the committed write from the store.
//
// Thread-safety: all public methods are safe to call concurrently. Does not own the store,
// analyzer, embedder, extractor or budget; owns its shards and worker threads.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "core/job_queue.h"
#include "core/memory_filter.h"
#include "core/memory_shard.h"
#include "core/rerank_stage.h"
#include "core/shard_budget.h"
#include "core/shard_cache.h"
#include "embed/embedder.h"
#include "extract/memory_categorizer.h"
#include "extract/memory_extractor.h"
#include "index/analyzer.h"
#include "store/agent_memory_store.h"

namespace engram {

struct MemoryAddRequest {
  std::string workspace;
  std::vector<ConversationMessage> messages;  // time_us 0: the request's timestamp or now
  std::string user_id;
  std::string agent_id;
  std::string run_id;
  std::string app_id;
  std::string metadata_json = "{}";  // a JSON object
  bool infer = true;
  std::optional<int64_t> timestamp_us;   // when the conversation happened
  std::optional<int64_t> expires_at_us;  // invisible from this time on
  // Extra guidance for fact extraction (what to remember or leave out), given to extractors that
  // follow instructions (MemoryExtractor::follows_instructions); Add refuses it for the others.
  std::string custom_instructions;
  // The categories to tag the new and updated memories with; empty = the default set.
  std::vector<CategorySpec> custom_categories;
};

struct MemorySearchRequest {
  std::string workspace;
  std::string query;
  MemoryFilter filter;  // includes the top-level user_id / agent_id / run_id / app_id
  size_t top_k = 10;
  float threshold = 0;
  bool explain = false;  // each hit says how it got its score (MemoryHit::explain)
  // "Now" for the query's relative dates (reference_date; core/query_time.h), microseconds.
  std::optional<int64_t> reference_us;
  // A hit whose replaced version held at the dates the query names shows that version
  // (MemoryQuery::show_replaced): for APIs that render a version's valid_to.
  bool show_replaced = false;
};

struct MemoryUpdateRequest {
  std::string workspace;
  std::string id;
  std::optional<std::string> text;
  std::optional<std::string> metadata_patch_json;  // a JSON object merged key by key
  std::optional<int64_t> timestamp_us;             // sets created_at (when it happened)
  std::optional<int64_t> expires_at_us;            // invisible from this time on
};

// One scope id in use in a workspace (mem0's entities): a user, agent, app or run with at least one
// visible memory.
struct MemoryEntity {
  std::string type;  // user | agent | app | run
  std::string name;  // the id
  size_t total_memories = 0;
  int64_t created_at_us = 0;  // of its oldest memory
  int64_t updated_at_us = 0;  // latest change of any of its memories
};

struct MemoryServiceOptions {
  MemoryShardOptions shard;
  int event_workers = 2;
  size_t similar_per_fact = 5;       // existing memories shown to the extractor per fact
  size_t max_queued_events = 10000;  // more pending events → 429 until workers catch up
  // Expired memories are deleted (with a history row) this often; 0 = never.
  std::chrono::seconds purge_interval{600};
  size_t backfill_batch = 32;  // texts per embedding call when re-embedding after a model change
  // Shared stores: how often to claim events of nodes whose lease ran out.
  std::chrono::milliseconds job_poll_interval{2000};
  MemoryCategorizerOptions categorizer;
  // The memory budget shared with the other shard caches; null: shards are never dropped. Not
  // owned; it must outlive the service.
  ShardBudget* budget = nullptr;
  // Where the workspaces' shards keep their vector graphs between loads ("": not kept).
  std::string graph_dir;
  // Row stamps (event, memory and feedback times), what expiry is compared with, and the job
  // queue's pauses (the purge's interval among them); null: RealClock(). Not owned; it must
  // outlive the service.
  const Clock* clock = nullptr;
};

class MemoryService {
 public:
  // `embedder` may be null (BM25 only); `extractor` must not be.
  MemoryService(AgentMemoryStore* store, const Analyzer* analyzer, const Embedder* embedder,
                const MemoryExtractor* extractor, MemoryServiceOptions options);
  ~MemoryService();  // Shutdown()

  // Queues every unfinished event of the store and starts the workers.
  Status Start();
  // Stops taking events; waits for the ones running. Queued events stay PENDING in the store.
  void Shutdown();
  // Saves the vector graph of every loaded workspace (at a clean stop, so the next start's loads
  // take them back); logs what it saved.
  void SaveGraphs();

  // Stores the add as a PENDING event; returns its id. kThrottled when too many are queued;
  // kInvalidParameter for custom_instructions the extractor cannot follow, or custom_categories
  // out of the categorizer's bounds (nothing is stored then).
  Result<std::string> Add(const MemoryAddRequest& request);
  // As Add, answering through `done` once the event is durable (called once, on the store's
  // thread or the caller's; it must not block) and queued for the workers.
  void AddAsync(const MemoryAddRequest& request, std::function<void(Result<std::string>)> done);
  // The event row; result_json holds {"results": [...], "events": [...]} once finished.
  Result<MemoryEventRecord> GetEvent(const std::string& workspace, const std::string& id);

  Result<std::vector<MemoryHit>> Search(const MemorySearchRequest& request);
  // The non-blocking probe: whether the workspace's shard is resident and loaded, so a search of it
  // answers without loading from the store. Takes only the cache's lock, briefly; an HTTP I/O
  // thread asks it before a search and leaves a cold workspace to a worker. (On a shared store
  // searches run on workers: one reads the version from the store first.)
  bool WorkspaceLoaded(const std::string& workspace) const;
  Result<AgentMemory> Get(const std::string& workspace, const std::string& id);
  // A new text is embedded again and its categories assigned again (from the default set).
  Result<AgentMemory> Update(const MemoryUpdateRequest& request);
  Status Delete(const std::string& workspace, const std::string& id);
  // Newest first; page_number from 1.
  Result<std::vector<AgentMemory>> List(const std::string& workspace, const MemoryFilter& filter,
                                        size_t page_number, size_t page_size, size_t* total);
  // Deletes every memory matching `filter` (which must name a scope); returns how many.
  Result<size_t> DeleteAll(const std::string& workspace, const MemoryFilter& filter);
  Result<std::vector<HistoryRecord>> History(const std::string& workspace, const std::string& id);

  // The named entities (people, places, products, code identifiers) of the visible memories
  // matching `filter`, which must name a scope; most mentioned first (see EntityCatalog).
  // page_number from 1; `total` gets how many there are.
  Result<std::vector<CatalogEntity>> NamedEntities(const std::string& workspace,
                                                   const MemoryFilter& filter, size_t page_number,
                                                   size_t page_size, size_t* total);
  // Every user / agent / app / run id having visible memories, most recently updated first (then
  // by type and name).
  Result<std::vector<MemoryEntity>> Entities(const std::string& workspace);
  // The workspace's events, newest first; page_number from 1; `total` gets their count. Events
  // being run read RUNNING, as in GetEvent.
  Result<std::vector<MemoryEventRecord>> ListEvents(const std::string& workspace,
                                                    size_t page_number, size_t page_size,
                                                    size_t* total);
  // Stores a user's verdict on a memory durably. kInvalidParameter for a feedback other than
  // POSITIVE, NEGATIVE, VERY_NEGATIVE or "" (none); kNotFound when the memory does not exist.
  Result<MemoryFeedbackRecord> RecordFeedback(const std::string& workspace,
                                              const std::string& memory_id,
                                              const std::string& feedback,
                                              const std::string& reason);

  // An optional reranker for the best `candidates` results of each search (see
  // core/rerank_stage.h); its failure never fails a search. Set before the first Search; not
  // owned.
  void SetReranker(const Reranker* reranker, size_t candidates) {
    rerank_.Set(reranker, candidates);
  }
  const RerankStage& rerank() const { return rerank_; }

  // Events waiting for a worker plus those running (0 = idle).
  size_t queued_events() const;
  size_t shard_memories() const;

 private:
  struct BackfillJob {
    std::string workspace;
  };
  using Job = std::variant<MemoryEventRecord, BackfillJob>;

  // The workspace's shard, loaded now if needed.
  Result<std::shared_ptr<MemoryShard>> Shard(const std::string& workspace);
  // The workspace's shard if it is resident and loaded (else null); loads nothing.
  std::shared_ptr<MemoryShard> ResidentShard(const std::string& workspace) const;
  size_t ScopeStripe(const std::string& workspace, const std::string& user_id,
                     const std::string& agent_id, const std::string& run_id,
                     const std::string& app_id) const;
  Mutex& ScopeLock(const std::string& workspace, const std::string& user_id,
                   const std::string& agent_id, const std::string& run_id,
                   const std::string& app_id);
  // Queues an event on its scope's stripe, so events of one scope run in acceptance order.
  void EnqueueEvent(MemoryEventRecord event);  // decodes the stored request for its scope
  size_t EventStripe(const MemoryAddRequest& request) const;  // its scope's stripe
  void RunJob(Job& job);
  // Shared stores: queues the events of dead nodes that the store hands to this node.
  void ClaimOrphanedEvents();
  // A change announced by a shared store: refreshes the workspace's shard if it is loaded.
  void OnScopeChanged(const std::string& scope_key);
  void RunEvent(const MemoryEventRecord& event);
  // Queues `event` again on `stripe` (its scope's) to run after a short pause: its workspace
  // could not be read from the store. Holds no worker meanwhile.
  void RetryLater(const MemoryEventRecord& event, size_t stripe);
  // The changes an event makes; kUnavailable etc. when extraction fails.
  Result<MemoryChangeBatch> PlanEvent(const MemoryEventRecord& event, const MemoryAddRequest& req,
                                      MemoryShard& shard, std::string* result_json);
  // Sets the categories of the batch's new and updated memories from their vectors.
  Status Categorize(const MemoryAddRequest& req, MemoryChangeBatch* batch) const;
  void RunBackfill(const std::string& workspace);
  void PurgeExpired();
  // Applies a committed batch to the shard.
  void ApplyToShard(MemoryShard& shard, const MemoryChangeBatch& batch,
                    const MemoryChangeOutcome& outcome);

  AgentMemoryStore* store_;
  std::atomic<int> listener_id_{0};  // store change listener (shared stores); 0 after Shutdown
  const Analyzer* analyzer_;
  const Embedder* embedder_;
  const MemoryExtractor* extractor_;
  MemoryServiceOptions options_;
  const Clock* const clock_;       // options_.clock, or RealClock()
  MemoryCategorizer categorizer_;  // over embedder_: no categories without one
  RerankStage rerank_{"memory search"};

  ShardCache<MemoryShard> shards_;  // by workspace, under options_.budget

  // Striped scope locks: serialises work on one scope without a map that grows forever.
  static constexpr size_t kStripes = 64;
  std::array<Mutex, kStripes> scope_locks_;

  mutable Mutex running_mu_;
  bool started_ GUARDED_BY(running_mu_) = false;
  std::set<std::string> running_ids_ GUARDED_BY(running_mu_);  // events being run
  // Declared last: destroyed (workers joined) before the members the jobs use.
  JobQueue<Job> jobs_;
};

// Encodes / decodes the stored form of an add request (the event's request column).
std::string EncodeAddRequest(const MemoryAddRequest& request);
Result<MemoryAddRequest> DecodeAddRequest(const std::string& workspace, const std::string& json);

}  // namespace engram
