// The one shard cache: made once per key, replaced at a newer scope version, the probe and the
// resident lookup never make or load, and the budget drops idle shards only.
#include "core/shard_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
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

// Opens once; Wait blocks until then.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// What the cache asked of a graph-keeping shard, kept apart from the shard so that the test
// holding it does not keep the shard busy (the budget drops idle shards only). Saves run on the
// cache's saver thread.
struct GraphCalls {
  std::atomic<int> saves{0};    // SaveGraph calls
  std::atomic<int> written{0};  // of them, those that wrote (not discarded)
  std::atomic<int> discards{0};
  std::atomic<bool> fail{false};
  std::atomic<bool> discarded{false};
  bool loaded_when_made = true;  // shards made from now on start loaded
  Gate* gate = nullptr;          // when set, a save waits for it to open
};

// A shard that keeps a vector graph; like VectorIndex, a discarded graph is never written. Like
// ScopeShard, reading its size waits for a save (the save holds the shard's lock).
struct GraphShard {
  explicit GraphShard(GraphCalls* c) : is_loaded(c->loaded_when_made), calls(c) {}
  bool loaded() const { return is_loaded.load(); }
  size_t MemoryBytes() const {
    std::lock_guard<std::mutex> lock(mu);
    return 1000;
  }
  Status SaveGraph() {
    std::lock_guard<std::mutex> lock(mu);
    if (calls->gate != nullptr) calls->gate->Wait();
    ++calls->saves;
    if (calls->fail) return Status::Unavailable("disk full");
    if (!calls->discarded) ++calls->written;
    return Status::Ok();
  }
  void DiscardGraph() {
    ++calls->discards;
    calls->discarded = true;
  }
  std::atomic<bool> is_loaded;
  GraphCalls* calls;
  mutable std::mutex mu;
};

// Opens the gate when the test leaves, so a failed assertion does not leave a save waiting.
struct OpenOnExit {
  ~OpenOnExit() { gate->Open(); }
  Gate* gate;
};

class ShardCacheGraphTest : public ::testing::Test {
 protected:
  // Holds and uses `key`, as a request does (the shard is held until after Used): with the budget
  // below, the second resident shard evicts the first.
  void Use(const std::string& key) {
    auto held = cache_.Hold(key);
    cache_.Used(true);
  }
  ShardBudget budget_{{.limit_bytes = 1500, .check_every = 1}};
  std::map<std::string, GraphCalls> calls_;
  ShardCache<GraphShard> cache_{ShardDomain::kLeaderboard, &budget_, [this](const std::string& k) {
                                  return std::make_shared<GraphShard>(&calls_[k]);
                                }};
};

TEST_F(ShardCacheGraphTest, EvictionAndShutdownSaveGraphsAndADropDiscardsOne) {
  Use("a");
  Use("b");  // 2,000 bytes: the idle "a" goes, its graph saved by the saver
  EXPECT_EQ(cache_.evictions(), 1);
  cache_.FlushGraphSaves();
  EXPECT_EQ(calls_["a"].written, 1);
  EXPECT_EQ(calls_["b"].saves, 0);
  // Shutdown: every resident shard saves; a failure is counted and reported.
  calls_["b"].fail = true;
  auto saved = cache_.SaveGraphs();
  EXPECT_EQ(saved.saved, 0u);
  EXPECT_EQ(saved.failed, 1u);
  EXPECT_EQ(saved.first_error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls_["b"].saves, 1);
  // Its data deleted: the graph is discarded, never saved.
  cache_.Drop("b");
  EXPECT_EQ(calls_["b"].discards, 1);
  EXPECT_EQ(cache_.SaveGraphs().saved + cache_.SaveGraphs().failed, 0u);
  EXPECT_EQ(calls_["b"].saves, 1);
}

TEST_F(ShardCacheGraphTest, AnEvictionDoesNotWaitForItsGraphToBeWritten) {
  Gate gate;
  OpenOnExit open{&gate};
  calls_["a"].gate = &gate;
  Use("a");
  // The save of "a" cannot finish until the gate opens; the use that evicted it returns anyway.
  auto evicting = std::async(std::launch::async, [this] { Use("b"); });
  ASSERT_EQ(evicting.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(cache_.evictions(), 1);
  EXPECT_EQ(calls_["a"].saves, 0);
  // Until it is written, the evicted shard's memory stays counted, and reading it does not wait
  // for the save.
  auto usage = std::async(std::launch::async, [this] {
    return budget_.Usage()[static_cast<size_t>(ShardDomain::kLeaderboard)];
  });
  ASSERT_EQ(usage.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(usage.get().shards, 2u);
  EXPECT_EQ(budget_.Usage()[static_cast<size_t>(ShardDomain::kLeaderboard)].bytes, 2000u);
  gate.Open();
  cache_.FlushGraphSaves();
  EXPECT_EQ(calls_["a"].written, 1);
  EXPECT_EQ(budget_.Usage()[static_cast<size_t>(ShardDomain::kLeaderboard)].shards, 1u);
  // A failed background save is counted.
  calls_["b"].fail = true;
  Use("c");
  cache_.FlushGraphSaves();
  EXPECT_EQ(calls_["b"].saves, 1);
  EXPECT_EQ(budget_.Usage()[static_cast<size_t>(ShardDomain::kLeaderboard)].graph_save_failures, 1);
}

TEST_F(ShardCacheGraphTest, AKeyLoadedAgainWaitsForItsEvictedShardsGraph) {
  Gate gate;
  OpenOnExit open{&gate};
  calls_["a"].gate = &gate;
  Use("a");
  Use("b");  // "a" evicted: its save waits at the gate
  calls_["a"].loaded_when_made = false;
  // A new shard of "a", still to load, is held only once the old one's graph is on disk.
  auto again = std::async(std::launch::async, [this] { return cache_.Hold("a"); });
  EXPECT_EQ(again.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_EQ(calls_["a"].written, 0);
  gate.Open();
  ASSERT_EQ(again.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(again.get().created);
  EXPECT_EQ(calls_["a"].written, 1);
  // A loaded shard is handed out at once.
  EXPECT_FALSE(cache_.Hold("b").created);
}

TEST_F(ShardCacheGraphTest, ADropDiscardsEvictedShardsWhoseGraphIsNotWrittenYet) {
  Gate gate;
  OpenOnExit open{&gate};
  calls_["a"].gate = &gate;
  Use("a");
  Use("b");  // "a" evicted: its save runs and waits at the gate
  Use("c");  // "b" evicted: its save waits behind the one of "a"
  EXPECT_EQ(cache_.evictions(), 2);
  cache_.Drop("b");
  EXPECT_EQ(calls_["b"].discards, 1);
  // The running save of "a" is reached too (a real shard's discard waits for the save on the
  // shard's lock, then removes the file it wrote).
  cache_.Drop("a");
  EXPECT_EQ(calls_["a"].discards, 1);
  gate.Open();
  cache_.FlushGraphSaves();
  EXPECT_EQ(calls_["a"].written, 0);
  EXPECT_EQ(calls_["b"].saves, 1);
  EXPECT_EQ(calls_["b"].written, 0);
  // Saved, a dropped shard is no longer the cache's: a later drop of its key does not reach it.
  Use("d");  // "c" evicted and saved
  cache_.FlushGraphSaves();
  cache_.Drop("c");
  EXPECT_EQ(calls_["c"].written, 1);
  EXPECT_EQ(calls_["c"].discards, 0);
}

}  // namespace
}  // namespace engram
