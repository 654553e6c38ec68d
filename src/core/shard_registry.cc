#include "core/shard_registry.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace engram {

ShardRegistry::ShardRegistry(MessageStore* store, const Analyzer* analyzer, ShardOptions options,
                             VectorBackfill* backfill, ShardRegistryOptions registry)
    : store_(store),
      analyzer_(analyzer),
      options_(std::move(options)),
      backfill_(backfill),
      registry_(registry) {
  budget_ = registry_.budget;
  if (budget_ == nullptr && registry_.memory_budget_bytes > 0) {
    own_budget_ = std::make_unique<ShardBudget>(ShardBudgetOptions{
        .limit_bytes = registry_.memory_budget_bytes, .check_every = registry_.check_every});
    budget_ = own_budget_.get();
  }
  if (budget_ != nullptr) {
    budget_cache_ = budget_->AddCache(
        ShardDomain::kLeaderboard,
        [this](const std::string& key, uint64_t id) { return EvictIfIdle(key, id); });
  }
  listener_id_ = store_->AddChangeListener([this](const std::string& key) { OnScopeChanged(key); });
}

ShardRegistry::~ShardRegistry() {
  StopListening();
  if (budget_ != nullptr) budget_->RemoveCache(budget_cache_);
}

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
  Key key{scope_key.substr(2, sep - 2), scope_key.substr(sep + 1)};
  std::shared_ptr<ScopeShard> shard;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = shards_.find(key);
    if (it == shards_.end()) return;  // not cached here: the next load reads everything anyway
    shard = it->second.shard;
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
    Slot& slot = it != shards_.end() ? it->second : shards_[{workspace, user_id}];
    if (!slot.shard) {
      slot.shard = std::make_shared<ScopeShard>(analyzer_, options_);
      created = true;
      if (budget_ != nullptr) {
        // Workspace names hold no unit separator (see OnScopeChanged): EvictIfIdle splits here.
        slot.budget = budget_->Admit(budget_cache_, workspace + '\x1f' + user_id,
                                     [weak = std::weak_ptr<ScopeShard>(slot.shard)]() -> size_t {
                                       auto s = weak.lock();
                                       return s && s->loaded() ? s->MemoryBytes() : 0;
                                     });
      }
    }
    slot.budget.Touch();
    // Held from here on, so the budget keeps it while this caller uses it.
    shard = slot.shard;
  }
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
  // Not under mu_: enforcing calls the evictors, this registry's among them.
  if (budget_ != nullptr) budget_->OnUse(created);
  return shard;
}

bool ShardRegistry::Loaded(const std::string& workspace, const std::string& user_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = shards_.find({workspace, user_id});
  return it != shards_.end() && it->second.shard->loaded();
}

void ShardRegistry::Drop(const std::string& workspace, const std::string& user_id) {
  std::lock_guard<std::mutex> lock(mu_);
  shards_.erase({workspace, user_id});
}

bool ShardRegistry::EvictIfIdle(const std::string& budget_key, uint64_t id) {
  const size_t sep = budget_key.find('\x1f');
  if (sep == std::string::npos) return false;
  std::lock_guard<std::mutex> lock(mu_);
  // Idle: only the registry holds it, so no search, write or vector job is using it.
  if (!EraseIfIdle(shards_, {budget_key.substr(0, sep), budget_key.substr(sep + 1)}, id,
                   &Slot::shard)) {
    return false;
  }
  evictions_.fetch_add(1);
  return true;
}

size_t ShardRegistry::shard_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shards_.size();
}

size_t ShardRegistry::doc_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, slot] : shards_) n += slot.shard->size();
  return n;
}

size_t ShardRegistry::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, slot] : shards_) n += slot.shard->MemoryBytes();
  return n;
}

}  // namespace engram
