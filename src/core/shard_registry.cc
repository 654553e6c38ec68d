#include "core/shard_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/thread_util.h"

namespace engram {

ShardRegistry::ShardRegistry(Store* store, const Analyzer* analyzer, ShardOptions options,
                             VectorBackfill* backfill, ShardRegistryOptions registry)
    : store_(store),
      analyzer_(analyzer),
      options_(std::move(options)),
      backfill_(backfill),
      registry_(registry) {
  listener_id_ = store_->AddChangeListener([this](const std::string& key) { OnScopeChanged(key); });
}

ShardRegistry::~ShardRegistry() { StopListening(); }

void ShardRegistry::StopListening() {
  const int id = listener_id_.exchange(0);
  if (id != 0) store_->RemoveChangeListener(id);
}

void ShardRegistry::OnScopeChanged(const std::string& scope_key) {
  // Leaderboard scope keys are "m<US>workspace<US>user_id" (ScopeKeyMessages); workspace names
  // hold no unit separator.
  if (scope_key.size() < 2 || scope_key[0] != 'm' || scope_key[1] != '\x1f') return;
  const size_t sep = scope_key.find('\x1f', 2);
  if (sep == std::string::npos) return;
  std::pair<std::string, std::string> key{scope_key.substr(2, sep - 2), scope_key.substr(sep + 1)};
  std::shared_ptr<ScopeShard> shard;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = shards_.find(key);
    if (it == shards_.end()) return;  // not cached here: the next load reads everything anyway
    shard = it->second;
  }
  Status st = shard->Refresh(store_, key.first, key.second);
  if (!st.ok()) spdlog::debug("early refresh of a shard failed: {}", st.ToString());
}

Result<std::shared_ptr<ScopeShard>> ShardRegistry::Get(const std::string& workspace,
                                                       const std::string& user_id) {
  std::shared_ptr<ScopeShard> shard;
  bool created = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = shards_.find({workspace, user_id});
    // Loading (or waiting for another thread's load) is the long wait: leave it to a thread that
    // may wait, before creating the slot so that its creator loads it as usual.
    if (ThisThreadAvoidsLongWaits() && (it == shards_.end() || !it->second->loaded())) {
      return Status(StatusCode::kWouldBlock, "the scope is not loaded yet");
    }
    auto& slot = it != shards_.end() ? it->second : shards_[{workspace, user_id}];
    if (!slot) {
      slot = std::make_shared<ScopeShard>(analyzer_, options_);
      created = true;
    }
    shard = slot;
  }
  shard->Touch();
  // Loading happens outside the registry lock so other scopes are not held up.
  if (created) {
    const auto started = std::chrono::steady_clock::now();
    Status st = shard->EnsureLoaded(store_, workspace, user_id);
    if (!st.ok()) return st;
    loads_.fetch_add(1);
    load_micros_.fetch_add(std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - started)
                               .count());
  } else {
    // Another caller may still be loading it (or its load failed and is retried here).
    Status st = shard->EnsureLoaded(store_, workspace, user_id);
    if (!st.ok()) return st;
    st = shard->Refresh(store_, workspace, user_id);
    if (!st.ok()) return st;
  }
  if (created && backfill_ != nullptr && shard->size() > 0) backfill_->EnqueueBackfill(shard);
  if (registry_.memory_budget_bytes > 0 &&
      (created || gets_.fetch_add(1) % std::max<size_t>(1, registry_.check_every) == 0)) {
    EvictOverBudget(shard.get());
  }
  return shard;
}

void ShardRegistry::Drop(const std::string& workspace, const std::string& user_id) {
  std::lock_guard<std::mutex> lock(mu_);
  shards_.erase({workspace, user_id});
}

void ShardRegistry::EvictOverBudget(const ScopeShard* keep) {
  std::lock_guard<std::mutex> lock(mu_);
  struct Entry {
    int64_t last_used;
    size_t bytes;
    std::map<std::pair<std::string, std::string>, std::shared_ptr<ScopeShard>>::iterator it;
  };
  std::vector<Entry> entries;
  size_t total = 0;
  for (auto it = shards_.begin(); it != shards_.end(); ++it) {
    size_t bytes = it->second->MemoryBytes();
    total += bytes;
    entries.push_back({it->second->last_used(), bytes, it});
  }
  if (total <= registry_.memory_budget_bytes) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
  for (const Entry& e : entries) {
    if (total <= registry_.memory_budget_bytes) break;
    // use_count 1: only the registry holds it, so no search, write or vector job is using it.
    if (e.it->second.get() == keep || e.it->second.use_count() > 1) continue;
    total -= e.bytes;
    shards_.erase(e.it);
    evictions_.fetch_add(1);
  }
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
