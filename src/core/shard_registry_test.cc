#include "core/shard_registry.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/ids.h"
#include "pg_test_db.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

MemoryRecord Message(const std::string& user, const std::string& text) {
  MemoryRecord m;
  m.id = NewId("m");
  m.workspace = "w";
  m.user_id = user;
  m.session_id = "s";
  m.text = text;
  m.created_at_us = m.updated_at_us = 1;
  return m;
}

std::vector<ShardHit> Find(ScopeShard& shard, const Analyzer& analyzer, const std::string& q,
                           const std::vector<float>& vector = {}) {
  return shard.Search(analyzer.AnalyzeQuery(q), vector, 10, RetrievalOptions{});
}

class ShardRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-registry-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = std::move(SqliteStore::Open({.path = dir_ + "/db"})).value();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void AddMessages(const std::string& user, int n) {
    AddBatch b;
    for (int i = 0; i < n; ++i)
      b.memories.push_back(Message(user, "note number " + std::to_string(i) + " about " + user));
    ASSERT_TRUE(store_->Add(b).ok());
  }

  std::string dir_;
  Analyzer analyzer_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(ShardRegistryTest, EvictsLeastRecentlyUsedShardsOverBudgetAndReloadsThem) {
  for (const char* user : {"a", "b", "c"}) AddMessages(user, 200);
  // Measure one shard, then allow a little more than two.
  size_t one = 0;
  {
    ShardRegistry probe(store_.get(), &analyzer_, ShardOptions{});
    one = (*probe.Get("w", "a"))->MemoryBytes();
  }
  ShardRegistry registry(store_.get(), &analyzer_, ShardOptions{}, nullptr,
                         {.memory_budget_bytes = one * 5 / 2, .check_every = 1});
  ASSERT_TRUE(registry.Get("w", "a").ok());
  ASSERT_TRUE(registry.Get("w", "b").ok());
  EXPECT_EQ(registry.evictions(), 0);
  ASSERT_TRUE(registry.Get("w", "a").ok());  // a is now more recent than b
  {
    auto c = registry.Get("w", "c");  // over budget: b goes
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(registry.evictions(), 1);
    EXPECT_EQ(registry.shard_count(), 2u);
  }
  const int64_t loads = registry.loads();
  auto b = registry.Get("w", "b");  // loaded again, complete
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(registry.loads(), loads + 1);
  EXPECT_EQ((*b)->size(), 200u);
  EXPECT_EQ(Find(**b, analyzer_, "note about b").size(), 10u);
}

// The probe an HTTP I/O thread asks before a search: a cold scope is not loaded, and asking loads
// or creates nothing; once a thread that may wait has loaded it, it is; a dropped one is not.
TEST_F(ShardRegistryTest, TheLoadedProbeNeverLoadsAndFollowsTheCache) {
  AddMessages("a", 50);
  ShardRegistry registry(store_.get(), &analyzer_, ShardOptions{});
  EXPECT_FALSE(registry.Loaded("w", "a"));
  EXPECT_EQ(registry.loads(), 0);
  EXPECT_EQ(registry.shard_count(), 0u);
  ASSERT_TRUE(registry.Get("w", "a").ok());
  EXPECT_EQ(registry.loads(), 1);
  EXPECT_TRUE(registry.Loaded("w", "a"));
  EXPECT_FALSE(registry.Loaded("w", "b"));
  registry.Drop("w", "a");
  EXPECT_FALSE(registry.Loaded("w", "a"));
}

TEST_F(ShardRegistryTest, AShardInUseIsNotEvicted) {
  for (const char* user : {"a", "b"}) AddMessages(user, 100);
  ShardRegistry registry(store_.get(), &analyzer_, ShardOptions{}, nullptr,
                         {.memory_budget_bytes = 1, .check_every = 1});
  auto a = registry.Get("w", "a");  // held by this test, like a running search
  ASSERT_TRUE(a.ok());
  auto b = registry.Get("w", "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(registry.shard_count(), 2u) << "both are in use";
  a->reset();
  ASSERT_TRUE(registry.Get("w", "b").ok());
  EXPECT_EQ(registry.shard_count(), 1u);
}

// Two registries on one PostgreSQL database stand for two nodes: a write through one store is
// seen by the other node's already loaded shard on its next Get, vectors included.
TEST(ShardRegistrySharedTest, AnotherNodesWritesReachALoadedShard) {
  auto db = testing::PgTestDatabase::Create();
  if (!db) GTEST_SKIP() << testing::PgTestDatabase::kSkipMessage;
  auto store_a = PgStore::Open({.url = db->url(), .connections = 2});
  auto store_b = PgStore::Open({.url = db->url(), .connections = 2});
  ASSERT_TRUE(store_a.ok() && store_b.ok());
  Analyzer analyzer;
  ShardOptions options;
  options.vector_model = "test-model";
  options.vectors.dim = 4;
  ShardRegistry node_b((*store_b).get(), &analyzer, options);
  auto before = node_b.Get("w", "u");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ((*before)->size(), 0u);

  AddBatch batch;
  batch.memories = {Message("u", "the harbour ferry leaves at noon")};
  auto added = (*store_a)->Add(batch);
  ASSERT_TRUE(added.ok());
  auto after = node_b.Get("w", "u");
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(Find(**after, analyzer, "ferry").size(), 1u);
  EXPECT_TRUE((*after)->MissingVectors().size() == 1u) << "no vector yet";

  ASSERT_TRUE((*store_a)->PutVectors({{added->stored[0].seq, "test-model", {1, 0, 0, 0}}}).ok());
  auto with_vector = node_b.Get("w", "u");
  ASSERT_TRUE(with_vector.ok());
  EXPECT_TRUE((*with_vector)->MissingVectors().empty()) << "node A's vector reached node B";
  EXPECT_EQ((*with_vector)->size(), 1u) << "a refresh never duplicates a memory";
}

// The store's change notifications refresh a loaded shard without any read asking for it.
TEST(ShardRegistrySharedTest, ANotifiedChangeRefreshesALoadedShardEarly) {
  auto db = testing::PgTestDatabase::Create();
  if (!db) GTEST_SKIP() << testing::PgTestDatabase::kSkipMessage;
  auto store_a = PgStore::Open({.url = db->url(), .connections = 2});
  auto store_b = PgStore::Open({.url = db->url(), .connections = 2});
  ASSERT_TRUE(store_a.ok() && store_b.ok());
  Analyzer analyzer;
  ShardRegistry node_b((*store_b).get(), &analyzer, ShardOptions{});
  auto shard = node_b.Get("w", "u");
  ASSERT_TRUE(shard.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // node B's LISTEN is in place
  AddBatch batch;
  batch.memories = {Message("u", "the night train to Vienna")};
  ASSERT_TRUE((*store_a)->Add(batch).ok());
  for (int i = 0; i < 200 && (*shard)->size() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ((*shard)->size(), 1u) << "no refresh within 2 s of the commit";
}

}  // namespace
}  // namespace engram
