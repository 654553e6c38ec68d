#include "core/shard_budget.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace engram {

struct ShardBudget::Entry {
  uint64_t id = 0;
  CacheId cache = 0;
  ShardDomain domain = ShardDomain::kLeaderboard;
  std::string key;
  std::function<size_t()> bytes;
  std::atomic<int64_t> last_used{0};
  std::atomic<int64_t>* clock = nullptr;  // the budget's
};

std::string_view ShardDomainName(ShardDomain domain) {
  switch (domain) {
    case ShardDomain::kLeaderboard:
      return "leaderboard";
    case ShardDomain::kMemories:
      return "memories";
    case ShardDomain::kKb:
      return "kb";
    case ShardDomain::kSkills:
      return "skills";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------------
// Resident

ShardBudget::Resident::Resident(ShardBudget* budget, std::shared_ptr<Entry> entry)
    : budget_(budget), entry_(std::move(entry)) {}

ShardBudget::Resident::~Resident() { Leave(); }

ShardBudget::Resident::Resident(Resident&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), entry_(std::move(other.entry_)) {}

ShardBudget::Resident& ShardBudget::Resident::operator=(Resident&& other) noexcept {
  if (this != &other) {
    Leave();
    budget_ = std::exchange(other.budget_, nullptr);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void ShardBudget::Resident::Leave() {
  if (budget_ != nullptr && entry_ != nullptr) budget_->Forget(entry_->id);
  budget_ = nullptr;
  entry_.reset();
}

void ShardBudget::Resident::Touch() const {
  if (entry_ == nullptr) return;
  entry_->last_used.store(entry_->clock->fetch_add(1, std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
}

uint64_t ShardBudget::Resident::id() const { return entry_ == nullptr ? 0 : entry_->id; }

// ---------------------------------------------------------------------------------------------
// ShardBudget

ShardBudget::ShardBudget(ShardBudgetOptions options) : options_(options) {}

ShardBudget::~ShardBudget() = default;

ShardBudget::CacheId ShardBudget::AddCache(ShardDomain domain, Evictor evict) {
  MutexLock lock(&mu_);
  const CacheId id = next_cache_++;
  caches_.emplace(id, Cache{domain, std::move(evict)});
  return id;
}

void ShardBudget::RemoveCache(CacheId cache) {
  // An enforcement copies the evictor and calls it while holding enforce_mu_: once both locks
  // were held here, no call into the cache is running or can start.
  MutexLock enforcing(&enforce_mu_);
  MutexLock lock(&mu_);
  caches_.erase(cache);
}

ShardBudget::Resident ShardBudget::Admit(CacheId cache, std::string key,
                                         std::function<size_t()> bytes) {
  auto entry = std::make_shared<Entry>();
  entry->key = std::move(key);
  entry->bytes = std::move(bytes);
  entry->clock = &clock_;
  entry->cache = cache;
  MutexLock lock(&mu_);
  auto it = caches_.find(cache);
  if (it != caches_.end()) entry->domain = it->second.domain;
  entry->id = next_id_++;
  residents_.emplace(entry->id, entry);
  Resident resident(this, std::move(entry));
  resident.Touch();
  return resident;
}

void ShardBudget::Forget(uint64_t id) {
  MutexLock lock(&mu_);
  residents_.erase(id);
}

void ShardBudget::OnUse(bool loaded) {
  if (options_.limit_bytes == 0) return;
  if (loaded) return EnforceLimit(/*wait=*/true);
  const size_t every = std::max<size_t>(1, options_.check_every);
  if (uses_.fetch_add(1, std::memory_order_relaxed) % every == 0) EnforceLimit(/*wait=*/false);
}

void ShardBudget::Enforce() { EnforceLimit(/*wait=*/true); }

void ShardBudget::EnforceLimit(bool wait) {
  if (options_.limit_bytes == 0) return;
  if (wait) {
    MutexLock enforcing(&enforce_mu_);
    EnforceLimitLocked();
    return;
  }
  if (!enforce_mu_.TryLock()) return;  // another thread is enforcing right now
  MutexLock enforcing(&enforce_mu_, std::adopt_lock);
  EnforceLimitLocked();
}

void ShardBudget::EnforceLimitLocked() {
  std::vector<std::shared_ptr<Entry>> residents;
  {
    MutexLock lock(&mu_);
    residents.reserve(residents_.size());
    for (const auto& [id, entry] : residents_) residents.push_back(entry);
  }
  // Sizes are read without the budget lock: reading one takes the shard's own lock, and caches
  // admit shards (taking mu_) meanwhile.
  struct Candidate {
    Entry* entry;
    size_t bytes;
    int64_t last_used;
  };
  std::vector<Candidate> candidates;
  candidates.reserve(residents.size());
  size_t total = 0;
  for (const auto& e : residents) {
    const size_t bytes = e->bytes ? e->bytes() : 0;
    total += bytes;
    candidates.push_back({e.get(), bytes, e->last_used.load(std::memory_order_relaxed)});
  }
  if (total <= options_.limit_bytes) return;
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.last_used != b.last_used ? a.last_used < b.last_used : a.entry->id < b.entry->id;
  });
  size_t dropped = 0;
  for (const Candidate& c : candidates) {
    if (total <= options_.limit_bytes) break;
    if (c.bytes == 0) continue;  // dropping it frees nothing (e.g. still loading)
    Evictor evict;
    {
      MutexLock lock(&mu_);
      if (!residents_.count(c.entry->id)) {
        total -= c.bytes;  // its cache dropped it meanwhile
        continue;
      }
      auto cache = caches_.find(c.entry->cache);
      if (cache == caches_.end()) continue;
      evict = cache->second.evict;
    }
    // No budget lock here: the evictor takes its cache's lock, under which the cache calls
    // Admit and Forget (the shard's Resident leaves the budget as the cache drops it).
    if (!evict(c.entry->key, c.entry->id)) continue;  // in use: kept
    total -= c.bytes;
    ++dropped;
    evictions_[static_cast<size_t>(c.entry->domain)].fetch_add(1, std::memory_order_relaxed);
  }
  if (dropped > 0) {
    spdlog::debug("shard budget: dropped {} idle shard(s); {} bytes resident, limit {}", dropped,
                  total, options_.limit_bytes);
  }
}

std::array<ShardDomainUsage, kShardDomainCount> ShardBudget::Usage() const {
  std::vector<std::shared_ptr<Entry>> residents;
  {
    MutexLock lock(&mu_);
    residents.reserve(residents_.size());
    for (const auto& [id, entry] : residents_) residents.push_back(entry);
  }
  std::array<ShardDomainUsage, kShardDomainCount> usage{};
  for (const auto& e : residents) {
    ShardDomainUsage& u = usage[static_cast<size_t>(e->domain)];
    ++u.shards;
    u.bytes += e->bytes ? e->bytes() : 0;
  }
  for (size_t d = 0; d < kShardDomainCount; ++d) {
    usage[d].evictions = evictions_[d].load();
    usage[d].graph_save_failures = graph_save_failures_[d].load();
  }
  return usage;
}

}  // namespace engram
