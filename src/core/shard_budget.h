// ShardBudget: one memory budget (--shard-memory-mb) over every in-memory shard cache: Leaderboard
// scopes (ShardRegistry), V4 memory workspaces (MemoryService), knowledge bases (KbService) and
// skill indexes (SkillService). Each cache registers the shards it holds (Admit) with a way to
// read their resident bytes, stamps them on every use (Resident::Touch), and offers an evictor.
// When the shards of all caches together exceed the limit, the least recently used ones across
// all domains are dropped until the rest fit. A shard that anything besides its cache still holds
// (a search, a write between its store commit and its shard update, a background job) is never
// dropped; a dropped shard is loaded again from the store on its next use, and the store already
// holds every acknowledged write.
//
// Enforcement walks every resident shard (their sizes are read then), so it is amortised: it runs
// after every load and every `check_every` uses, as the Leaderboard registry always did.
//
// Locking: the budget never holds its own lock while it calls a cache's evictor or reads a
// shard's size, so a cache may call Admit, Touch and the Resident destructor under its own lock.
// OnUse and Enforce call evictors, which take their cache's lock: call them with no cache lock
// held.
//
// Thread-safety: safe for concurrent use. Does not own the caches or their shards. It must outlive
// every cache registered with it; a cache calls RemoveCache before it goes away.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/mutex.h"

namespace engram {

enum class ShardDomain { kLeaderboard = 0, kMemories, kKb, kSkills };
inline constexpr size_t kShardDomainCount = 4;
// "leaderboard", "memories", "kb", "skills" (the /metrics label values).
std::string_view ShardDomainName(ShardDomain domain);

struct ShardBudgetOptions {
  size_t limit_bytes = 0;     // 0: no limit (shards are counted, never dropped)
  size_t check_every = 1024;  // uses between two enforcements (every load enforces too)
};

// What one domain holds (ShardBudget::Usage).
struct ShardDomainUsage {
  size_t shards = 0;
  size_t bytes = 0;
  int64_t evictions = 0;  // since start
  // Dropped shards whose vector graph could not be saved (each costs its next load a build),
  // since start.
  int64_t graph_save_failures = 0;
};

class ShardBudget {
  struct Entry;

 public:
  // Drops the cache's shard that was admitted as `id` under `key` if the cache is its only
  // holder; true when it was dropped. Called with no budget lock held.
  using Evictor = std::function<bool(const std::string& key, uint64_t id)>;
  using CacheId = int;

  // A shard's place in the budget, kept by the cache beside the shard. Destroying it (the cache
  // dropped the shard for any reason) takes the shard out of the budget. An empty Resident (a
  // cache without a budget) does nothing.
  class Resident {
   public:
    Resident() = default;
    ~Resident();
    Resident(Resident&& other) noexcept;
    Resident& operator=(Resident&& other) noexcept;
    Resident(const Resident&) = delete;
    Resident& operator=(const Resident&) = delete;

    // Marks the shard used now (lock-free).
    void Touch() const;
    // The id the evictor is called with; 0 for an empty Resident.
    uint64_t id() const;

   private:
    friend class ShardBudget;
    Resident(ShardBudget* budget, std::shared_ptr<Entry> entry);
    void Leave();

    ShardBudget* budget_ = nullptr;
    std::shared_ptr<Entry> entry_;
  };

  explicit ShardBudget(ShardBudgetOptions options);
  ~ShardBudget();
  ShardBudget(const ShardBudget&) = delete;
  ShardBudget& operator=(const ShardBudget&) = delete;

  // Registers a cache of `domain`; its shards are admitted under the returned id.
  CacheId AddCache(ShardDomain domain, Evictor evict);
  // After this returns the cache's evictor is not running and is never called again. Call it
  // with no cache lock held (it waits for a running enforcement).
  void RemoveCache(CacheId cache);

  // A shard became resident in `cache`. `bytes` reads its resident size; it is called without
  // any budget or cache lock and must tolerate the shard being gone (capture a weak_ptr). The
  // shard starts as used now.
  Resident Admit(CacheId cache, std::string key, std::function<size_t()> bytes);

  // A cache used one of its shards (`loaded`: it has just loaded it). Enforces the limit after a
  // load and every check_every uses. Call with no cache lock held.
  void OnUse(bool loaded);
  // Drops least recently used idle shards until the resident ones fit the limit (tests, loads).
  void Enforce();

  size_t limit_bytes() const { return options_.limit_bytes; }
  // Shards, bytes (read now) and evictions per domain, indexed by ShardDomain.
  std::array<ShardDomainUsage, kShardDomainCount> Usage() const;
  int64_t evictions(ShardDomain domain) const {
    return evictions_[static_cast<size_t>(domain)].load();
  }
  // A cache of `domain` could not save a dropped shard's graph (lock-free).
  void CountGraphSaveFailure(ShardDomain domain) {
    graph_save_failures_[static_cast<size_t>(domain)].fetch_add(1, std::memory_order_relaxed);
  }

 private:
  struct Cache {
    ShardDomain domain;
    Evictor evict;
  };
  void Forget(uint64_t id) EXCLUDES(mu_);
  // `wait`: wait for a running enforcement (a load's check); else skip when one is running.
  void EnforceLimit(bool wait) EXCLUDES(enforce_mu_, mu_);
  // One enforcement: drops least recently used idle shards until the rest fit the limit.
  void EnforceLimitLocked() REQUIRES(enforce_mu_) EXCLUDES(mu_);

  const ShardBudgetOptions options_;
  // Held for a whole enforcement, so two never race to drop the same bytes twice; taken before
  // any cache lock (an evictor's) and never while holding mu_.
  Mutex enforce_mu_ ACQUIRED_BEFORE(mu_);
  mutable Mutex mu_;
  std::map<CacheId, Cache> caches_ GUARDED_BY(mu_);
  std::unordered_map<uint64_t, std::shared_ptr<Entry>> residents_ GUARDED_BY(mu_);
  CacheId next_cache_ GUARDED_BY(mu_) = 1;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::atomic<int64_t> clock_{0};  // use ticks: the LRU order
  std::atomic<uint64_t> uses_{0};
  std::array<std::atomic<int64_t>, kShardDomainCount> evictions_{};
  std::array<std::atomic<int64_t>, kShardDomainCount> graph_save_failures_{};
};

// The idle rule of every cache's evictor, called under the cache's own lock: takes map[key] out
// only if it is still the slot the budget admitted as `id` (not replaced meanwhile) and nothing but
// the cache holds its shard (use_count 1: no search, write or background job is using it), and
// returns its shard (null when it stays). `held` is the slot's shared_ptr member; the slot's
// ShardBudget::Resident is its `budget` member. The caller lets the shard go after its lock.
template <typename Map, typename Slot, typename Shard>
std::shared_ptr<Shard> TakeIfIdle(Map& map, const typename Map::key_type& key, uint64_t id,
                                  std::shared_ptr<Shard> Slot::*held) {
  auto it = map.find(key);
  if (it == map.end() || it->second.budget.id() != id) return nullptr;
  if ((it->second.*held).use_count() > 1) return nullptr;
  std::shared_ptr<Shard> taken = std::move(it->second.*held);
  map.erase(it);
  return taken;
}

}  // namespace engram
