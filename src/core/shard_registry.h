// ShardRegistry: finds or creates the ScopeShard of a scope and loads it from the store on first
// use. After a load, memories without a vector of the current model are handed to the vector
// backfill.
//
// Shards are caches of the store. On a shared store (several nodes) every Get first brings the
// shard up to date with other nodes' writes (ScopeShard::Refresh). Under a memory budget (see
// core/shard_budget.h, shared with the other shard caches) the least recently used shards are
// dropped when the resident ones exceed it (a shard in use elsewhere, e.g. by a search, a write or
// the vector queue, is kept); a dropped shard is loaded again on its next use.
//
// Thread-safety: safe for concurrent use. Owns its shards; does not own the store, analyzer,
// backfill or budget.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/scope_shard.h"
#include "core/shard_budget.h"
#include "core/shard_cache.h"
#include "core/vector_backfill.h"
#include "store/message_store.h"

namespace engram {

struct ShardRegistryOptions {
  // The budget shared with the other shard caches (not owned; it must outlive the registry).
  // Null: the registry keeps its own budget of memory_budget_bytes (0: never evict).
  ShardBudget* budget = nullptr;
  size_t memory_budget_bytes = 0;
  // An own budget is checked after every load and every this many Gets (the check walks all
  // shards). A shared budget has its own check_every.
  size_t check_every = 1024;
  // Where the scopes' shards keep their vector graphs between loads ("": not kept).
  std::string graph_dir;
};

class ShardRegistry {
 public:
  // `backfill` may be null (no embedder). On a shared store the registry also refreshes loaded
  // shards when the store announces a change (see ScopeSync::AddChangeListener).
  ShardRegistry(MessageStore* store, const Analyzer* analyzer, ShardOptions options,
                VectorBackfill* backfill = nullptr, ShardRegistryOptions registry = {});
  ~ShardRegistry();  // StopListening()
  // Stops taking the store's change announcements (idempotent). Call it before the store goes
  // away when the store is destroyed first.
  void StopListening();
  ShardRegistry(const ShardRegistry&) = delete;
  ShardRegistry& operator=(const ShardRegistry&) = delete;

  // The loaded, up-to-date shard of a scope (loading it now if needed).
  Result<std::shared_ptr<ScopeShard>> Get(const std::string& workspace, const std::string& user_id);
  // The non-blocking probe: whether the scope's shard is resident and loaded, so that Get answers
  // without a load (on a shared store it may still read the scope's version). Takes only the
  // registry's lock, briefly; an HTTP I/O thread asks it before a search, and leaves a cold scope
  // to a worker.
  bool Loaded(const std::string& workspace, const std::string& user_id) const;
  // Forgets a scope's shard (its data was deleted from the store): the next Get loads it afresh.
  // A search holding the shard finishes on it.
  void Drop(const std::string& workspace, const std::string& user_id);
  // Saves the vector graph of every loaded scope (at a clean stop); logs what it saved.
  void SaveGraphs();

  size_t shard_count() const;
  size_t doc_count() const;
  size_t MemoryBytes() const;
  // Figures for /metrics and the benchmarks.
  int64_t loads() const { return loads_.load(); }
  int64_t load_micros() const { return load_micros_.load(); }
  int64_t evictions() const { return shards_.evictions(); }

 private:
  // A change announced by a shared store: brings the scope's shard up to date if it is loaded.
  void OnScopeChanged(const std::string& scope_key);

  MessageStore* store_;
  const Analyzer* analyzer_;
  ShardOptions options_;
  VectorBackfill* backfill_;
  const std::string graph_dir_;              // ShardRegistryOptions::graph_dir
  std::unique_ptr<ShardBudget> own_budget_;  // when no shared budget was given; before shards_
  ShardCache<ScopeShard> shards_;            // keyed "workspace<US>user_id"
  std::atomic<int64_t> loads_{0};
  std::atomic<int64_t> load_micros_{0};
  std::atomic<int> listener_id_{0};
};

}  // namespace engram
