// ScopeShard: the in-memory search state of one scope (workspace + user_id): its documents in a
// HybridIndex (BM25 and vectors, by id and store seq) with each session's turn order (TurnOrder),
// and the Leaderboard's retrieval steps over them: conversation windows, neighbouring turns, date
// priors and the question factor. A cache of the store; rebuilt from it on first use.
//
// Thread-safety: all methods are safe to call concurrently. Searches share a reader lock; applying
// new records takes the writer lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "core/retrieval_options.h"
#include "core/search_explanation.h"
#include "index/analyzer.h"
#include "index/hybrid_index.h"
#include "index/passages.h"
#include "index/query_dates.h"
#include "index/turn_order.h"
#include "store/message_store.h"

namespace engram {

// What the passages of one long message share (index/passages.h), for a result's context.
struct MessageShape {
  std::string title;  // MessageTitle
  uint32_t passages = 0;
  uint32_t lines = 0;  // lines of the whole message
  uint32_t bytes = 0;  // bytes of the whole message
};

// What a shard keeps of a memory, or of one passage of a long memory: enough to rank it and
// render it without a store read.
struct ShardDoc {
  std::string id;
  int64_t seq = 0;
  std::string text;        // indexed text
  std::string parts_json;  // stored ContentPart array (image references); empty for text memories
  std::string session_id;
  std::string role;
  int64_t time_us = 0;  // the message time if given, else when it was stored
  bool has_source_time = false;
  int32_t position = 0;
  bool asks = false;  // the text ends with a question mark (RetrievalOptions::question_factor)
  // A passage of a long message (null `shape`: the document is the whole message). The passages
  // of a message hold consecutive slots, the first under the message's id and seq.
  std::shared_ptr<const MessageShape> shape;
  uint32_t passage = 0;     // index among the message's passages
  uint32_t begin = 0;       // byte offset of `text` in the message
  uint32_t first_line = 0;  // 1-based lines of the message that `text` spans
  uint32_t last_line = 0;
};

// A turn an excerpt shows beside its hit: what a result renders of it (a copy of those fields of
// its ShardDoc, so an answer of 100 excerpts copies no ids or sessions it does not show).
struct ShardTurn {
  std::string role;
  std::string text;
  std::string parts_json;
  int64_t time_us = 0;
};

struct ShardHit {
  // A copy, so the caller may use it after the lock is released. For a long message, an excerpt:
  // the matching passage with the adjacent passages that also matched, up to kMaxExcerptBytes
  // (text, begin, first_line and last_line describe the excerpt).
  ShardDoc doc;
  float score = 0;
  // With RetrievalOptions::excerpts: the run of consecutive turns of doc's session the result
  // shows, in conversation order, doc among them at `anchor`; empty when it shows doc alone.
  std::vector<ShardTurn> turns;
  size_t anchor = 0;
  // Set by an explained search: how doc (for a long message, its best ranked passage) got the
  // result's score.
  std::optional<SearchExplanation> explain;
};

struct ShardOptions {
  Bm25Options bm25;
  VectorIndexOptions vectors;
  std::string vector_model;  // vectors of other models are ignored (and re-embedded)
};

class ScopeShard {
 public:
  ScopeShard(const Analyzer* analyzer, ShardOptions options);

  // Loads the scope from the store once; later calls return at once. A failed load is retried on
  // the next call.
  Status EnsureLoaded(MessageStore* store, std::string_view workspace, std::string_view user_id);
  // Whether EnsureLoaded has finished (any thread, no lock).
  bool loaded() const { return loaded_.load(std::memory_order_acquire); }

  // Shared stores (several nodes): brings a loaded shard up to date with what other nodes wrote —
  // one indexed version read, then only the rows changed since the version this shard has seen.
  // Does nothing for a store that is not shared.
  Status Refresh(MessageStore* store, std::string_view workspace, std::string_view user_id);

  // Adds records that are not present yet (by memory id), so applying the same write twice, or a
  // write that a concurrent load already saw, is harmless. Records' vectors of the shard's model
  // go into the vector index (also for records already present: a refresh brings vectors another
  // node computed).
  void Apply(const std::vector<MemoryRecord>& records) EXCLUDES(mu_);

  // Sets vectors for present documents (by store seq); unknown seqs are ignored.
  void ApplyVectors(const std::vector<VectorUpdate>& updates);

  // Fresh writes whose vectors are being computed (see VectorBackfill): count and text bytes.
  void AddPendingVectors(size_t n, size_t bytes);
  void DonePendingVectors(size_t n, size_t bytes);
  // Waits until no fresh vectors are pending or `timeout` passes. Does not wait at all when more
  // than `max_bytes` of text is pending: that much work would stall the search for seconds, and
  // BM25 plus the vectors already present answer meanwhile. True when nothing is pending.
  bool WaitForPendingVectors(std::chrono::milliseconds timeout, size_t max_bytes) const;

  // Documents that have no vector of the shard's model: (seq, text) pairs to embed.
  std::vector<std::pair<int64_t, std::string>> MissingVectors() const;

  // Ranked hits for a query: analysed terms, its vector (empty: BM25 only) and the dates it names
  // (see ParseQueryDates). Passages of long messages are ranked on their own; a message appears
  // at most once, as an excerpt of its passages that ranked. `explain`: each hit says how it got
  // its score (ShardHit::explain); the ranking is the same either way.
  std::vector<ShardHit> Search(const std::vector<std::string>& terms,
                               const std::vector<float>& query_vector, size_t k,
                               const RetrievalOptions& options,
                               const std::optional<TimeRange>& dates = std::nullopt,
                               bool explain = false) const;

  // Messages (not passages).
  size_t size() const;
  size_t MemoryBytes() const;

  // The vector graph kept between loads (options.vectors.graph_file; ShardCache calls these):
  // saves it, or removes it for good once the scope's data is deleted.
  Status SaveGraph() EXCLUDES(mu_);
  void DiscardGraph() EXCLUDES(mu_);

 private:
  // A record's passages and their analysed terms, prepared outside the lock.
  struct Prepared {
    std::vector<PassageSpan> spans;
    std::vector<std::vector<std::string>> terms;  // per passage
  };
  void ApplyLocked(const std::vector<MemoryRecord>& records, const std::vector<Prepared>& prepared)
      REQUIRES(mu_);
  // Sets the vectors of the message whose first passage is `first` from its stored vector.
  void SetMessageVectorsLocked(DocId first, std::string_view model, std::span<const float> stored)
      REQUIRES(mu_);
  // Position of a doc in its session's turn order (`docs` is docs_, read under mu_).
  static bool TurnBefore(const std::vector<ShardDoc>& docs, DocId a, DocId b);
  // The best `k` messages of `ranked` (passages), each once, as excerpts centred on the passage
  // of the message that ranks first in `lexical` (the query's words), else on its best ranked.
  // `explained`: the explained search `ranked` came from, fused by `method`; null when not asked.
  std::vector<ShardHit> ExcerptsLocked(const std::vector<ScoredDoc>& ranked,
                                       const std::vector<ScoredDoc>& lexical, size_t k,
                                       const HybridHits* explained, FusionMethod method) const
      REQUIRES_SHARED(mu_);

  const Analyzer* analyzer_;
  ShardOptions options_;
  Mutex load_mu_;                    // serialises loading and refreshing
  std::atomic<bool> loaded_{false};  // written under load_mu_; read by loaded()
  // The store's scope version this shard reflects.
  int64_t version_ GUARDED_BY(load_mu_) = 0;

  mutable Mutex pending_mu_;
  mutable CondVar pending_cv_;
  size_t pending_vectors_ GUARDED_BY(pending_mu_) = 0;
  size_t pending_bytes_ GUARDED_BY(pending_mu_) = 0;

  mutable SharedMutex mu_;
  // Documents by id and seq (never removed: dense slots).
  HybridIndex index_ GUARDED_BY(mu_);
  std::vector<ShardDoc> docs_ GUARDED_BY(mu_);  // by index_ slot
  // What ranking reads of each doc (TurnFacts), by slot, beside docs_: a search reads it for
  // every candidate and neighbour, and reaching into docs_ for it missed the cache (~3 % of a
  // search's CPU at 100 results).
  struct PackedFacts {
    uint32_t chars = 0;  // text bytes, at most UINT32_MAX
    bool asks = false;
  };
  std::vector<PackedFacts> facts_ GUARDED_BY(mu_);
  size_t messages_ GUARDED_BY(mu_) = 0;
  bool has_passages_ GUARDED_BY(mu_) = false;  // some message is more than one passage
  // Each session's turns in conversation order (message time, then write order).
  TurnOrder turns_ GUARDED_BY(mu_);
};

}  // namespace engram
