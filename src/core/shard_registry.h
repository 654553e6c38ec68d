// ShardRegistry: finds or creates the ScopeShard of a scope and loads it from the store on first
// use. After a load, memories without a vector of the current model are handed to the vector
// backfill. Shards stay resident (an LRU budget comes with multi-node support).
//
// Thread-safety: safe for concurrent use. Owns its shards; does not own the store, analyzer or
// backfill.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/scope_shard.h"
#include "core/vector_backfill.h"

namespace engram {

class ShardRegistry {
 public:
  // `backfill` may be null (no embedder).
  ShardRegistry(Store* store, const Analyzer* analyzer, ShardOptions options,
                VectorBackfill* backfill = nullptr);

  // The loaded shard of a scope (loading it now if needed).
  Result<std::shared_ptr<ScopeShard>> Get(const std::string& workspace, const std::string& user_id);

  size_t shard_count() const;
  size_t doc_count() const;
  size_t MemoryBytes() const;

 private:
  Store* store_;
  const Analyzer* analyzer_;
  ShardOptions options_;
  VectorBackfill* backfill_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<ScopeShard>> shards_;  // guarded by mu_
};

}  // namespace engram
