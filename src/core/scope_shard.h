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
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "core/retrieval_options.h"
#include "index/analyzer.h"
#include "index/hybrid_index.h"
#include "index/query_dates.h"
#include "index/turn_order.h"
#include "store/message_store.h"

namespace engram {

// What a shard keeps of a memory: enough to rank it and render it without a store read.
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
};

struct ShardHit {
  ShardDoc doc;  // a copy, so the caller may use it after the lock is released
  float score = 0;
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
  void Apply(const std::vector<MemoryRecord>& records);

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
  // (see ParseQueryDates).
  std::vector<ShardHit> Search(const std::vector<std::string>& terms,
                               const std::vector<float>& query_vector, size_t k,
                               const RetrievalOptions& options,
                               const std::optional<TimeRange>& dates = std::nullopt) const;

  size_t size() const;
  size_t MemoryBytes() const;

 private:
  void ApplyLocked(const std::vector<MemoryRecord>& records,
                   const std::vector<std::vector<std::string>>& terms);
  // Position of a doc in its session's turn order.
  bool TurnBefore(DocId a, DocId b) const;

  const Analyzer* analyzer_;
  ShardOptions options_;
  std::mutex load_mu_;               // serialises loading and refreshing
  std::atomic<bool> loaded_{false};  // written under load_mu_; read by loaded()
  int64_t version_ = 0;  // guarded by load_mu_: the store's scope version this shard reflects

  mutable std::mutex pending_mu_;
  mutable std::condition_variable pending_cv_;
  size_t pending_vectors_ = 0;  // guarded by pending_mu_
  size_t pending_bytes_ = 0;    // guarded by pending_mu_

  mutable std::shared_mutex mu_;
  HybridIndex index_;  // guarded by mu_: documents by id and seq (never removed: dense slots)
  std::vector<ShardDoc> docs_;  // guarded by mu_; by index_ slot
  // Each session's turns in conversation order (message time, then write order).
  TurnOrder turns_;  // guarded by mu_
};

}  // namespace engram
