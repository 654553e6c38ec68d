// ShardBudget over fake caches of known sizes: least recently used idle shards go first across
// every domain, held shards stay, enforcement stops once the rest fit, and the amortised check.
#include "core/shard_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace engram {
namespace {

struct FakeShard {
  explicit FakeShard(size_t b) : bytes(b) {}
  std::atomic<size_t> bytes;
};

// A shard cache as the services keep one: a map under a lock, the budget's Resident beside each
// shard, an evictor that drops only shards no caller holds.
class FakeCache {
 public:
  FakeCache(ShardBudget* budget, ShardDomain domain) : budget_(budget) {
    cache_ = budget_->AddCache(domain, [this](const std::string& key, uint64_t id) {
      ++evict_calls_;
      std::lock_guard<std::mutex> lock(mu_);
      auto it = slots_.find(key);
      if (it == slots_.end() || it->second.budget.id() != id) return false;
      if (it->second.shard.use_count() > 1) return false;
      slots_.erase(it);
      return true;
    });
  }
  ~FakeCache() { budget_->RemoveCache(cache_); }

  // Finds or creates ("loads") the shard of `key`.
  std::shared_ptr<FakeShard> Get(const std::string& key, size_t bytes = 100) {
    std::shared_ptr<FakeShard> shard;
    bool created = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Slot& slot = slots_[key];
      if (!slot.shard) {
        slot.shard = std::make_shared<FakeShard>(bytes);
        slot.budget = budget_->Admit(cache_, key, [weak = std::weak_ptr<FakeShard>(slot.shard)] {
          auto s = weak.lock();
          return s ? s->bytes.load() : size_t{0};
        });
        created = true;
      }
      slot.budget.Touch();
      shard = slot.shard;
    }
    budget_->OnUse(created);
    return shard;
  }
  bool Resident(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_.count(key) > 0;
  }
  // The shard of `key` if resident (without using it), else null.
  std::shared_ptr<FakeShard> Peek(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(key);
    return it == slots_.end() ? nullptr : it->second.shard;
  }
  void Drop(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_.erase(key);
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_.size();
  }
  int evict_calls() const { return evict_calls_.load(); }

 private:
  struct Slot {
    std::shared_ptr<FakeShard> shard;
    ShardBudget::Resident budget;
  };
  ShardBudget* budget_;
  ShardBudget::CacheId cache_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, Slot> slots_;
  std::atomic<int> evict_calls_{0};
};

size_t TotalBytes(const ShardBudget& budget) {
  size_t total = 0;
  for (const ShardDomainUsage& u : budget.Usage()) total += u.bytes;
  return total;
}

TEST(ShardBudgetTest, WithoutALimitShardsAreCountedAndNeverDropped) {
  ShardBudget budget({.limit_bytes = 0, .check_every = 1});
  FakeCache memories(&budget, ShardDomain::kMemories);
  FakeCache kb(&budget, ShardDomain::kKb);
  for (int i = 0; i < 5; ++i) memories.Get("w" + std::to_string(i), 1000);
  kb.Get("k", 300);
  budget.Enforce();
  EXPECT_EQ(memories.size(), 5u);
  const auto usage = budget.Usage();
  EXPECT_EQ(usage[static_cast<size_t>(ShardDomain::kMemories)].shards, 5u);
  EXPECT_EQ(usage[static_cast<size_t>(ShardDomain::kMemories)].bytes, 5000u);
  EXPECT_EQ(usage[static_cast<size_t>(ShardDomain::kKb)].bytes, 300u);
  EXPECT_EQ(usage[static_cast<size_t>(ShardDomain::kSkills)].shards, 0u);
  EXPECT_EQ(memories.evict_calls(), 0);
}

// The least recently used idle shard goes first, whichever domain it belongs to, and no more are
// dropped once the rest fit.
TEST(ShardBudgetTest, DropsTheLeastRecentlyUsedShardAcrossDomainsUntilTheRestFit) {
  ShardBudget budget({.limit_bytes = 250, .check_every = 1000});
  FakeCache leaderboard(&budget, ShardDomain::kLeaderboard);
  FakeCache memories(&budget, ShardDomain::kMemories);
  FakeCache kb(&budget, ShardDomain::kKb);
  leaderboard.Get("a");
  memories.Get("b");
  leaderboard.Get("a");  // a is now more recent than b
  kb.Get("c");           // 300 bytes > 250 after this load: b goes
  EXPECT_TRUE(leaderboard.Resident("a"));
  EXPECT_FALSE(memories.Resident("b"));
  EXPECT_TRUE(kb.Resident("c"));
  EXPECT_EQ(budget.evictions(ShardDomain::kMemories), 1);
  EXPECT_EQ(budget.evictions(ShardDomain::kLeaderboard), 0);
  EXPECT_EQ(budget.evictions(ShardDomain::kKb), 0);
  EXPECT_EQ(TotalBytes(budget), 200u);
  const auto usage = budget.Usage();
  EXPECT_EQ(usage[static_cast<size_t>(ShardDomain::kMemories)].shards, 0u);
  EXPECT_EQ(usage[static_cast<size_t>(ShardDomain::kMemories)].evictions, 1);
  // A dropped shard comes back on its next use (and the oldest other one makes room).
  memories.Get("b");
  EXPECT_TRUE(memories.Resident("b"));
  EXPECT_FALSE(leaderboard.Resident("a"));
  EXPECT_TRUE(kb.Resident("c"));
}

TEST(ShardBudgetTest, DropsAsManyAsNeededInLeastRecentlyUsedOrder) {
  ShardBudget budget({.limit_bytes = 100, .check_every = 1000});
  FakeCache skills(&budget, ShardDomain::kSkills);
  FakeCache memories(&budget, ShardDomain::kMemories);
  {
    // Held while the four load, as a long search would hold them: nothing can go yet.
    std::vector<std::shared_ptr<FakeShard>> held;
    held.push_back(skills.Get("s1", 60));
    held.push_back(memories.Get("m1", 60));
    held.push_back(skills.Get("s2", 60));
    held.push_back(memories.Get("m2", 60));
    EXPECT_EQ(skills.size() + memories.size(), 4u);
    EXPECT_EQ(TotalBytes(budget), 240u);
  }
  memories.Get("m1");  // the most recent
  budget.Enforce();
  EXPECT_TRUE(memories.Resident("m1"));
  EXPECT_FALSE(skills.Resident("s1"));
  EXPECT_FALSE(skills.Resident("s2"));
  EXPECT_FALSE(memories.Resident("m2"));
  EXPECT_EQ(TotalBytes(budget), 60u);
  EXPECT_EQ(budget.evictions(ShardDomain::kSkills), 2);
  EXPECT_EQ(budget.evictions(ShardDomain::kMemories), 1);
}

// A shard held elsewhere (a search, a write between its commit and its shard update) is kept;
// the next idle one goes instead, and when every shard is held the budget stays exceeded.
TEST(ShardBudgetTest, AHeldShardIsKeptAndTheNextIdleOneGoes) {
  ShardBudget budget({.limit_bytes = 250, .check_every = 1000});
  FakeCache memories(&budget, ShardDomain::kMemories);
  FakeCache kb(&budget, ShardDomain::kKb);
  auto oldest = memories.Get("old");  // held by this test
  kb.Get("k1");
  kb.Get("k2");  // over: "old" is the least recent but held, so k1 goes
  EXPECT_TRUE(memories.Resident("old"));
  EXPECT_FALSE(kb.Resident("k1"));
  EXPECT_TRUE(kb.Resident("k2"));
  auto k2 = kb.Peek("k2");
  auto k3 = kb.Get("k3");  // everything held: nothing can go
  EXPECT_EQ(memories.size() + kb.size(), 3u);
  EXPECT_EQ(TotalBytes(budget), 300u);
  oldest.reset();
  budget.Enforce();  // released: now it goes
  EXPECT_FALSE(memories.Resident("old"));
  EXPECT_EQ(kb.size(), 2u);
}

TEST(ShardBudgetTest, AUseEnforcesEveryCheckEveryUsesAndEveryLoad) {
  ShardBudget budget({.limit_bytes = 150, .check_every = 3});
  FakeCache kb(&budget, ShardDomain::kKb);
  FakeCache memories(&budget, ShardDomain::kMemories);
  {
    auto a = kb.Get("a");  // load: enforced (fits)
    auto b = kb.Get("b");  // load: enforced, both held: kept
  }
  EXPECT_EQ(kb.size(), 2u);
  kb.Get("b");  // use 1: enforced (the first use of each round of 3), idle a goes
  EXPECT_EQ(kb.size(), 1u);
  EXPECT_TRUE(kb.Resident("b"));
  auto c = memories.Get("c");  // load: enforced, idle b goes
  EXPECT_FALSE(kb.Resident("b"));
  memories.Get("c");  // use 2
  kb.Get("d");        // load: enforced, but c and d are both held then
  EXPECT_TRUE(kb.Resident("d"));
  c.reset();
  memories.Get("c");  // use 3: over the limit, but no check is due
  EXPECT_EQ(memories.size() + kb.size(), 2u);
  memories.Get("c");  // use 4: the next round's check drops idle d
  EXPECT_FALSE(kb.Resident("d"));
  EXPECT_TRUE(memories.Resident("c"));
}

// A Resident leaves the budget when its cache drops the shard itself (deleted data, a stale
// version), and a removed cache's evictor is never called again.
TEST(ShardBudgetTest, ShardsACacheDropsLeaveAndARemovedCacheIsNotCalled) {
  ShardBudget budget({.limit_bytes = 150, .check_every = 1000});
  auto memories = std::make_unique<FakeCache>(&budget, ShardDomain::kMemories);
  memories->Get("a");
  memories->Drop("a");
  EXPECT_EQ(budget.Usage()[static_cast<size_t>(ShardDomain::kMemories)].shards, 0u);
  memories->Get("b");
  memories.reset();  // removes the cache; its shards leave with it
  EXPECT_EQ(budget.Usage()[static_cast<size_t>(ShardDomain::kMemories)].shards, 0u);
  FakeCache kb(&budget, ShardDomain::kKb);
  kb.Get("x");
  kb.Get("y");  // 200 > 150: x goes, nothing of the removed cache is asked
  EXPECT_FALSE(kb.Resident("x"));
  EXPECT_EQ(budget.evictions(ShardDomain::kMemories), 0);
}

// Many threads use, load and drop shards of three caches under a tight budget. A shard a thread
// holds is never dropped from its cache, and nothing deadlocks.
TEST(ShardBudgetTest, ConcurrentUseNeverDropsAHeldShard) {
  ShardBudget budget({.limit_bytes = 500, .check_every = 4});
  std::vector<std::unique_ptr<FakeCache>> caches;
  for (ShardDomain d : {ShardDomain::kMemories, ShardDomain::kKb, ShardDomain::kSkills}) {
    caches.push_back(std::make_unique<FakeCache>(&budget, d));
  }
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        FakeCache& cache = *caches[(i + t) % caches.size()];
        // Keys of their own: only the budget drops another thread's shards.
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string((i * 7) % 5);
        auto shard = cache.Get(key);
        if (i % 5 == 0) std::this_thread::yield();
        if (cache.Peek(key) != shard) violations.fetch_add(1);  // dropped while held
        if (i % 97 == 0) cache.Drop(key);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(violations.load(), 0);
  budget.Enforce();
  EXPECT_LE(TotalBytes(budget), 500u);
  int64_t evictions = 0;
  for (ShardDomain d : {ShardDomain::kMemories, ShardDomain::kKb, ShardDomain::kSkills}) {
    evictions += budget.evictions(d);
  }
  EXPECT_GT(evictions, 0);
}

}  // namespace
}  // namespace engram
