#include "core/shard_registry.h"

namespace engram {

ShardRegistry::ShardRegistry(Store* store, const Analyzer* analyzer, ShardOptions options,
                             VectorBackfill* backfill)
    : store_(store), analyzer_(analyzer), options_(std::move(options)), backfill_(backfill) {}

Result<std::shared_ptr<ScopeShard>> ShardRegistry::Get(const std::string& workspace,
                                                       const std::string& user_id) {
  std::shared_ptr<ScopeShard> shard;
  bool created = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = shards_[{workspace, user_id}];
    if (!slot) {
      slot = std::make_shared<ScopeShard>(analyzer_, options_);
      created = true;
    }
    shard = slot;
  }
  // Loading happens outside the registry lock so other scopes are not held up.
  Status st = shard->EnsureLoaded(store_, workspace, user_id);
  if (!st.ok()) return st;
  if (created && backfill_ != nullptr && shard->size() > 0) backfill_->EnqueueBackfill(shard);
  return shard;
}

size_t ShardRegistry::shard_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shards_.size();
}

size_t ShardRegistry::doc_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, shard] : shards_) n += shard->size();
  return n;
}

size_t ShardRegistry::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, shard] : shards_) n += shard->MemoryBytes();
  return n;
}

}  // namespace engram
