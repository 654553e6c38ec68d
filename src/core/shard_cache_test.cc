// The one shard cache: made once per key, replaced at a newer scope version, the probe and the
// resident lookup never make or load, and the budget drops idle shards only.
#include "core/shard_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>

namespace engram {
namespace {

struct FakeShard {
  std::atomic<bool> done{false};
  size_t bytes = 1000;
  bool loaded() const { return done.load(); }
  size_t MemoryBytes() const { return bytes; }
};

class ShardCacheTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeShard> Make() {
    ++made_;
    return std::make_shared<FakeShard>();
  }
  int made_ = 0;
};

TEST_F(ShardCacheTest, MakesOncePerKeyAndAgainOnlyAtANewerVersion) {
  ShardCache<FakeShard> cache(ShardDomain::kKb, nullptr,
                              [this](const std::string&) { return Make(); });
  auto a = cache.Hold("a");
  EXPECT_TRUE(a.created);
  auto again = cache.Hold("a");
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.shard, a.shard);
  EXPECT_EQ(made_, 1);
  // A shared store's scope moved on: a new shard; the holder of the old one keeps it.
  auto newer = cache.Hold("a", 5);
  EXPECT_TRUE(newer.created);
  EXPECT_NE(newer.shard, a.shard);
  EXPECT_FALSE(cache.Hold("a", 5).created);
  EXPECT_FALSE(cache.Hold("a", 3).created);  // an older reader does not go back
  EXPECT_EQ(made_, 2);
  EXPECT_EQ(cache.size(), 1u);
}

TEST_F(ShardCacheTest, TheProbeAndResidentNeverMakeOrLoad) {
  ShardCache<FakeShard> cache(ShardDomain::kMemories, nullptr,
                              [this](const std::string&) { return Make(); });
  EXPECT_FALSE(cache.Loaded("a"));
  EXPECT_EQ(cache.Resident("a"), nullptr);
  EXPECT_EQ(made_, 0);
  auto a = cache.Hold("a");
  EXPECT_FALSE(cache.Loaded("a"));  // made, not loaded yet
  EXPECT_EQ(cache.Resident("a"), nullptr);
  a.shard->done = true;
  EXPECT_TRUE(cache.Loaded("a"));
  EXPECT_EQ(cache.Resident("a"), a.shard);
  cache.Drop("a");
  EXPECT_FALSE(cache.Loaded("a"));
  EXPECT_EQ(cache.size(), 0u);
}

TEST_F(ShardCacheTest, TheBudgetDropsIdleShardsOnly) {
  ShardBudget budget({.limit_bytes = 1500, .check_every = 1});
  ShardCache<FakeShard> cache(ShardDomain::kSkills, &budget,
                              [this](const std::string&) { return Make(); });
  auto held = cache.Hold("held");
  held.shard->done = true;
  cache.Used(true);
  {
    auto idle = cache.Hold("idle");
    idle.shard->done = true;
  }
  cache.Used(true);  // 2,000 bytes resident: the idle one goes, the held one stays
  EXPECT_TRUE(cache.Loaded("held"));
  EXPECT_FALSE(cache.Loaded("idle"));
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_EQ(budget.evictions(ShardDomain::kSkills), 1);
  EXPECT_EQ(budget.Usage()[static_cast<size_t>(ShardDomain::kSkills)].shards, 1u);
  // Dropped, it is made again on its next use.
  EXPECT_TRUE(cache.Hold("idle").created);
}

// What the cache asked of a graph-keeping shard, kept apart from the shard so that the test
// holding it does not keep the shard busy (the budget drops idle shards only).
struct GraphCalls {
  int saves = 0;
  int discards = 0;
  bool fail = false;
};

// A shard that keeps a vector graph.
struct GraphShard {
  explicit GraphShard(GraphCalls* c) : calls(c) {}
  bool loaded() const { return true; }
  size_t MemoryBytes() const { return 1000; }
  Status SaveGraph() {
    ++calls->saves;
    return calls->fail ? Status::Unavailable("disk full") : Status::Ok();
  }
  void DiscardGraph() { ++calls->discards; }
  GraphCalls* calls;
};

TEST(ShardCacheGraphTest, EvictionAndShutdownSaveGraphsAndADropDiscardsOne) {
  ShardBudget budget({.limit_bytes = 1500, .check_every = 1});
  std::map<std::string, GraphCalls> calls;
  ShardCache<GraphShard> cache(ShardDomain::kLeaderboard, &budget, [&](const std::string& key) {
    return std::make_shared<GraphShard>(&calls[key]);
  });
  (void)cache.Hold("a");
  cache.Used(true);
  (void)cache.Hold("b");
  cache.Used(true);  // 2,000 bytes: the idle "a" goes, saving its graph first
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_EQ(calls["a"].saves, 1);
  EXPECT_EQ(calls["b"].saves, 0);
  // Shutdown: every resident shard saves; a failure is counted and reported.
  calls["b"].fail = true;
  auto saved = cache.SaveGraphs();
  EXPECT_EQ(saved.saved, 0u);
  EXPECT_EQ(saved.failed, 1u);
  EXPECT_EQ(saved.first_error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls["b"].saves, 1);
  // Its data deleted: the graph is discarded, never saved.
  cache.Drop("b");
  EXPECT_EQ(calls["b"].discards, 1);
  EXPECT_EQ(cache.SaveGraphs().saved + cache.SaveGraphs().failed, 0u);
  EXPECT_EQ(calls["b"].saves, 1);
}

}  // namespace
}  // namespace engram
