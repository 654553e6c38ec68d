#include "core/shard_registry.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/shard_graphs.h"
#include "core/shard_keys.h"
#include "index/hnsw_graph.h"

namespace engram {

namespace {

ShardBudget* OwnBudgetOr(ShardBudget* shared, const ShardRegistryOptions& registry,
                         std::unique_ptr<ShardBudget>* own) {
  if (shared != nullptr || registry.memory_budget_bytes == 0) return shared;
  *own = std::make_unique<ShardBudget>(ShardBudgetOptions{
      .limit_bytes = registry.memory_budget_bytes, .check_every = registry.check_every});
  return own->get();
}

}  // namespace

ShardRegistry::ShardRegistry(MessageStore* store, const Analyzer* analyzer, ShardOptions options,
                             VectorBackfill* backfill, ShardRegistryOptions registry)
    : store_(store),
      analyzer_(analyzer),
      options_(std::move(options)),
      backfill_(backfill),
      graph_dir_(registry.graph_dir),
      shards_(ShardDomain::kLeaderboard, OwnBudgetOr(registry.budget, registry, &own_budget_),
              [this](const std::string& key) {
                ShardOptions shard = options_;
                SetShardGraph(&shard.vectors, graph_dir_, ShardDomain::kLeaderboard, key);
                return std::make_shared<ScopeShard>(analyzer_, std::move(shard));
              }) {
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
  const std::string workspace = scope_key.substr(2, sep - 2);
  const std::string user_id = scope_key.substr(sep + 1);
  // Not cached here: the next load reads everything anyway.
  std::shared_ptr<ScopeShard> shard = shards_.Resident(LeaderboardShardKey(workspace, user_id));
  if (!shard) return;
  Status st = shard->Refresh(store_, workspace, user_id);
  if (!st.ok()) spdlog::debug("early refresh of a shard failed: {}", st.ToString());
}

Result<std::shared_ptr<ScopeShard>> ShardRegistry::Get(const std::string& workspace,
                                                       const std::string& user_id) {
  // Held from here on, so the budget keeps it while this caller uses it.
  auto [shard, created] = shards_.Hold(LeaderboardShardKey(workspace, user_id));
  // Loading happens outside the cache's lock so other scopes are not held up.
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
  shards_.Used(created);
  return shard;
}

bool ShardRegistry::Loaded(const std::string& workspace, const std::string& user_id) const {
  return shards_.Loaded(LeaderboardShardKey(workspace, user_id));
}

void ShardRegistry::Drop(const std::string& workspace, const std::string& user_id) {
  const std::string key = LeaderboardShardKey(workspace, user_id);
  shards_.Drop(key);
  // The scope's data is gone: its saved graph too, whether or not a shard was resident.
  HnswGraph::RemoveSaved(ShardGraphPath(graph_dir_, ShardDomain::kLeaderboard, key));
}

void ShardRegistry::SaveGraphs() {
  if (!graph_dir_.empty()) shards_.SaveGraphs();
}

size_t ShardRegistry::shard_count() const { return shards_.size(); }

size_t ShardRegistry::doc_count() const {
  size_t n = 0;
  shards_.ForEach(
      [&](const std::string&, const std::shared_ptr<ScopeShard>& s) { n += s->size(); });
  return n;
}

size_t ShardRegistry::MemoryBytes() const {
  size_t n = 0;
  shards_.ForEach(
      [&](const std::string&, const std::shared_ptr<ScopeShard>& s) { n += s->MemoryBytes(); });
  return n;
}

}  // namespace engram
