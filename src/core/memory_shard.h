// MemoryShard: the in-memory search state of one workspace's agent memories (memory API V4): the
// memories in a HybridIndex (BM25 and vectors, by id and store seq), and an index from user_id /
// agent_id / run_id / app_id to memories, so a search confined to one user scans only that user's
// memories however large the workspace. A cache of the store; rebuilt from it on first use.
//
// Unlike leaderboard shards, memories change: Upsert replaces a memory's text, metadata and
// vector in place and Remove takes it out of every index at once.
//
// Thread-safety: all methods are safe to call concurrently; reads share a lock, writes take it
// exclusively.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "core/memory_filter.h"
#include "core/retrieval_options.h"
#include "core/search_explanation.h"
#include "index/analyzer.h"
#include "index/entity_catalog.h"
#include "index/fusion.h"
#include "index/hybrid_index.h"
#include "index/query_dates.h"
#include "index/turn_order.h"
#include "store/agent_memory_store.h"

namespace engram {

// An agent memory as the shard keeps it (and hands out, by copy).
struct AgentMemory {
  std::string id;
  int64_t seq = 0;
  std::string text;
  std::string user_id;
  std::string agent_id;
  std::string run_id;
  std::string app_id;
  std::string session_id;
  std::string metadata_json = "{}";
  std::vector<std::string> categories;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  std::optional<int64_t> expires_at_us;
  // A verbatim memory (added with infer: false) is one message of a conversation: its role is
  // kVerbatimRole and source_ts_us the message's time. An extracted one's source_ts_us is the
  // time of the latest message it came from (unset for memories stored before that was kept).
  std::string role;
  std::optional<int64_t> source_ts_us;
  // Where it came from (see core/memory_provenance.h); empty when unknown.
  std::string provenance_json;
  // Set only on a version an update replaced, which a search about its time shows: when it began
  // to hold and when the next one began. The current version's start is read from its provenance
  // when rendered (ValidFromUs, core/memory_provenance.h).
  std::optional<int64_t> valid_from_us;
  std::optional<int64_t> valid_to_us;

  // When what the memory records happened: the message time, else when it was stored.
  int64_t time_us() const { return source_ts_us.value_or(created_at_us); }
  bool VisibleAt(int64_t now_us) const { return !expires_at_us || now_us < *expires_at_us; }
};

// The role of memories that keep a message as it was said (added with infer: false).
inline constexpr std::string_view kVerbatimRole = "verbatim";

// A version of a memory that an update replaced: what it said, where that came from, and when it
// held ([valid_from_us, valid_to_us); valid_to_us is when the next version began).
struct ReplacedVersion {
  std::string text;
  std::string provenance_json;
  int64_t valid_from_us = 0;
  int64_t valid_to_us = 0;
};

// The store record of a memory (no vector).
MemoryRecord ToRecord(const AgentMemory& m);

// A change of `op` (kUpdate or kDelete) to memory `m`, remembering its current text and metadata
// for the history; an update's new values go into the returned change's record.
MemoryChange ChangeOf(const AgentMemory& m, MemoryChange::Op op);

struct MemoryHit {
  AgentMemory memory;
  float score = 0;       // fused relevance, 0..1
  float similarity = 0;  // cosine of query and memory vectors; 0 when either has none
  std::optional<SearchExplanation> explain;  // when the query asked (MemoryQuery::explain)
};

// The visible memories of one scope id (MemoryShard::Scopes).
struct ScopeSummary {
  std::string field;  // user_id | agent_id | run_id | app_id
  std::string value;
  size_t memories = 0;
  int64_t first_created_at_us = 0;
  int64_t last_updated_at_us = 0;
};

struct MemoryShardOptions {
  Bm25Options bm25;
  VectorIndexOptions vectors;
  // Fusion, candidates and the conversation steps, as the Leaderboard's search uses them: the
  // verbatim memories of one session (metadata session_id) form a conversation, so windowed
  // BM25 and neighbours apply to them; the date prior and the question factor to every memory.
  RetrievalOptions retrieval;
  std::string vector_model;  // vectors of other models are ignored (and re-embedded)
  // Keep an index of top-level metadata values, so that a filter's necessary metadata equalities
  // (MemoryFilter::MetadataEqualities) pick the candidates of Search and List instead of the
  // filter being tested on every memory of the scope. Off: the scope path alone (for comparisons).
  bool metadata_index = true;
};

struct MemoryQuery {
  std::vector<std::string> terms;        // analysed query
  std::vector<float> vector;             // empty: BM25 only
  const MemoryFilter* filter = nullptr;  // must confine the search (ScopeKeys() set)
  size_t k = 10;
  float threshold = 0;  // hits scoring lower are dropped
  int64_t now_us = 0;   // memories expired at this time are invisible
  // The time the query names (ParseQueryDates with whole years: "in 2022" is that year), for the
  // date prior and the version a hit shows.
  std::optional<TimeRange> dates;
  // false: BM25 and vectors fused, nothing else (finding a new fact's most similar memories,
  // where a neighbouring turn is not similar).
  bool conversation_steps = true;
  // The query names a code identifier (NamesCodeIdentifier): ranked with
  // RetrievalOptions::identifier_vector_weight.
  bool names_identifier = false;
  bool explain = false;  // fill MemoryHit::explain
  // When the query names a time (`dates`) and a hit's current version began after it, show the
  // replaced version that held then, if one did (its valid_to_us set). Whether shown or not, such
  // a memory's date prior is that version's.
  bool show_replaced = false;
};

class MemoryShard {
 public:
  MemoryShard(const Analyzer* analyzer, MemoryShardOptions options);

  // Loads the workspace from the store once; a failed load is retried on the next call.
  Status EnsureLoaded(AgentMemoryStore* store, const std::string& workspace);
  // Whether EnsureLoaded has finished (any thread, no lock).
  bool loaded() const { return loaded_.load(std::memory_order_acquire); }

  // Shared stores (several nodes): brings the loaded shard up to date with other nodes' writes
  // (a version read, then only the memories changed or deleted since). Nothing otherwise.
  Status Refresh(AgentMemoryStore* store, const std::string& workspace);
  // The store version of the workspace's agent memories this shard reflects (0 when not shared).
  int64_t version() const;

  // Inserts a memory or replaces the one with its id (text, metadata, times, vector). A record
  // without a vector of the shard's model leaves the memory without one.
  void Upsert(const MemoryRecord& record) EXCLUDES(mu_);
  void Remove(const std::string& id) EXCLUDES(mu_);
  // One change of Apply's: the record to upsert, or else the id of the memory to remove.
  struct Change {
    const MemoryRecord* upsert = nullptr;
    const std::string* remove_id = nullptr;
  };
  // Upserts and removals in order, in one write: a search sees all of them or none, and the
  // vector graph catches up once (a saved graph file is rewritten once for all the removals, each
  // 1 MiB block holding some of them once, instead of once per removal). The pointers are read
  // during the call only.
  void Apply(const std::vector<Change>& changes) EXCLUDES(mu_);
  // Sets vectors by store seq (background re-embedding); unknown seqs are ignored.
  void ApplyVectors(const std::vector<VectorUpdate>& updates);

  std::optional<AgentMemory> Get(const std::string& id, int64_t now_us) const;

  // Ranked memories matching query.filter (BM25 and vector candidates fused), best first; see
  // MemoryQuery::show_replaced for the versions updates replaced.
  // Errors: kInvalidParameter when the filter does not confine the search to some user_id /
  // agent_id / run_id / app_id.
  Result<std::vector<MemoryHit>> Search(const MemoryQuery& query) const;

  // Every visible memory matching `filter`, newest first (created_at, then write order).
  // `total` gets their count; [offset, offset + limit) of them are returned.
  std::vector<AgentMemory> List(const MemoryFilter& filter, int64_t now_us, size_t offset,
                                size_t limit, size_t* total) const;

  // Every scope id with memories visible at now_us, from the scope-key index, in no particular
  // order.
  std::vector<ScopeSummary> Scopes(int64_t now_us) const;

  // The named entities of the visible memories matching `filter` (EntityCatalog's order and alias
  // merging). Memories of one conversation (ConversationKey), or without one of the same scope
  // ids, link their mentions. The first listing that reads a memory finds its mentions in its
  // text and keeps them until the text changes; a listing, not a search step.
  std::vector<CatalogEntity> NamedEntities(const MemoryFilter& filter, int64_t now_us) const;

  // Live memories that expired before now_us (to purge).
  std::vector<AgentMemory> Expired(int64_t now_us) const;

  // Memories without a vector of the shard's model: (seq, text) pairs to embed.
  std::vector<std::pair<int64_t, std::string>> MissingVectors() const;

  size_t size() const;
  size_t MemoryBytes() const;
  // The vector graph kept between loads (options.vectors.graph_file; ShardCache calls these):
  // saves it, or removes it for good once the workspace's data is deleted.
  Status SaveGraph() EXCLUDES(mu_);
  void DiscardGraph() EXCLUDES(mu_);
  // Entries (doc, metadata value) in the metadata index; 0 when it is off.
  size_t metadata_postings() const;

 private:
  struct Doc {
    AgentMemory memory;
    nlohmann::json metadata;  // parsed once, for filters
    bool asks = false;        // the text ends with a question mark (the question factor)
    // The versions updates replaced, oldest first: from the history at load, then as they are
    // replaced (Upsert of a new text). A refresh from other nodes sees only the latest of several
    // updates made between two refreshes; the next load has them all.
    std::vector<ReplacedVersion> replaced;
  };
  // The replaced version of `doc` that held during `range`, when its current version began only
  // after the range: the latest that began by the range's end and ended after its beginning;
  // nullptr when the current version is the one to show.
  static const ReplacedVersion* VersionDuring(const Doc& doc, const TimeRange& range);
  // Builds each loaded memory's replaced versions from its history rows (ADD / UPDATE, oldest
  // first; those of unknown ids are skipped).
  void LoadReplacedLocked(const std::vector<HistoryRecord>& rows) REQUIRES(mu_);
  // The conversation a memory belongs to: its scope ids and session id, or its run when it has no
  // session id; "" (no neighbours) for memories of neither, and for extracted ones that carry no
  // message time (a verbatim memory's time is its message's; an extracted one's its messages').
  static std::string ConversationKey(const AgentMemory& m);
  // The memory's user, agent, run and app ids (and session id when `with_session`) as one key.
  static std::string ScopeIdsKey(const AgentMemory& m, bool with_session);
  // Position of a doc in its conversation's turn order (`docs` is docs_, read under mu_).
  static bool TurnBefore(const std::vector<Doc>& docs, DocId a, DocId b);
  // How many of `docs` (distinct) are live.
  size_t LiveCount(const std::vector<DocId>& docs) const REQUIRES_SHARED(mu_);
  void UpsertLocked(const MemoryRecord& record, const std::vector<std::string>& terms)
      REQUIRES(mu_);
  void RemoveLocked(const std::string& id) REQUIRES(mu_);
  FilterDoc ViewOf(const Doc& d) const;
  // Docs listed under any of `keys` in the scope-key index (removed ones included), in DocId order.
  std::vector<DocId> ScopeDocs(const std::vector<ScopeKey>& keys) const REQUIRES_SHARED(mu_);
  // Live, visible docs matching `filter`, found through the scope-key and metadata indexes;
  // nullopt when the filter names no scope key and no indexed metadata equality.
  std::optional<std::vector<DocId>> Candidates(const MemoryFilter& filter, int64_t now_us) const
      REQUIRES_SHARED(mu_);
  // Live, visible docs matching `filter`: through the indexes (Candidates) when the filter allows,
  // else by testing every doc.
  std::vector<DocId> Matching(const MemoryFilter& filter, int64_t now_us) const
      REQUIRES_SHARED(mu_);
  // Adds (or removes) `d` to (from) the metadata index under each value of `metadata`.
  void IndexMetadata(DocId d, const nlohmann::json& metadata, bool add) REQUIRES(mu_);
  // Live docs satisfying the filter's necessary metadata equalities, intersected with `scope`
  // (sorted DocIds) when given, in DocId order; nullopt when the filter has none or the index is
  // off. A superset of the matching docs: the caller still tests the filter.
  std::optional<std::vector<DocId>> MetadataDocs(const MemoryFilter& filter,
                                                 const std::vector<DocId>* scope) const
      REQUIRES_SHARED(mu_);

  const Analyzer* analyzer_;
  MemoryShardOptions options_;
  mutable Mutex load_mu_;            // serialises loading and refreshing
  std::atomic<bool> loaded_{false};  // written under load_mu_; read by loaded()
  int64_t version_ GUARDED_BY(load_mu_) = 0;

  mutable SharedMutex mu_;
  // Memories by id and seq, with their BM25 terms and vectors. Slots are not reused: the scope
  // lists below may still name a removed memory's slot.
  HybridIndex index_ GUARDED_BY(mu_);
  std::vector<Doc> docs_ GUARDED_BY(mu_);  // by index_ slot
  // "u:<user_id>", "a:<agent_id>", "r:<run_id>", "p:<app_id>" -> docs (may list removed docs;
  // checked on use).
  std::unordered_map<std::string, std::vector<DocId>> by_scope_ GUARDED_BY(mu_);
  // Metadata index: top-level key -> canonical value key (MetadataValueKeys) -> live docs having
  // it, sorted. Empty when options_.metadata_index is off.
  std::unordered_map<std::string, std::unordered_map<std::string, std::vector<DocId>>> by_metadata_
      GUARDED_BY(mu_);
  size_t metadata_postings_ GUARDED_BY(mu_) = 0;
  TurnOrder turns_ GUARDED_BY(mu_);  // verbatim memories in conversation order

  // Each listed memory's entity mentions (FindEntityMentions of its text), by slot: reading the
  // text is most of a listing's work, so it is done once per text, by the first listing that
  // needs it (not at load: most workspaces are never listed). Listings hold mu_ shared, so the
  // cache has its own lock, taken after mu_ and only to look up or insert; UpsertLocked (a new
  // text) and RemoveLocked drop a memory's entry under mu_ held exclusively, so an entry read
  // under mu_ shared stays valid until mu_ is released.
  mutable Mutex mentions_mu_ ACQUIRED_AFTER(mu_);
  mutable std::unordered_map<DocId, std::vector<EntityMention>> mentions_ GUARDED_BY(mentions_mu_);
  mutable size_t mentions_bytes_ GUARDED_BY(mentions_mu_) = 0;  // what the entries hold
  void ForgetMentionsLocked(DocId d) REQUIRES(mu_) EXCLUDES(mentions_mu_);
};

}  // namespace engram
