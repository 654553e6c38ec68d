// Store: leaderboard messages, vectors, images and idempotency, on every backend (SQLite and, with
// a test cluster, PostgreSQL), plus what several PostgreSQL nodes on one database rely on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>

#include "memory_records.h"
#include "store_backends.h"

namespace engram {
namespace {

class StoreTest : public testing::StoreBackendTest {
 protected:
  static int SchemaVersion(Store* store) {
    if (auto* s = dynamic_cast<SqliteStore*>(store)) return s->schema_version();
    if (auto* s = dynamic_cast<PgStore*>(store)) return s->schema_version();
    return 0;
  }
};

TEST_P(StoreTest, AddThenLoadScopeInOrder) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_GE(SchemaVersion(store.get()), 1);
  AddBatch b;
  b.memories = {testing::TestMemory("u1", "first"), testing::TestMemory("u1", "second"),
                testing::TestMemory("u2", "other")};
  b.memories[0].source_ts_us = 42;
  auto out = store->Add(b);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->duplicate);
  ASSERT_EQ(out->stored.size(), 3u);
  EXPECT_LT(out->stored[0].seq, out->stored[1].seq);

  auto scope = store->LoadScope("w", "u1");
  ASSERT_TRUE(scope.ok());
  ASSERT_EQ(scope->size(), 2u);
  EXPECT_EQ((*scope)[0].text, "first");
  EXPECT_EQ((*scope)[0].source_ts_us, 42);
  EXPECT_FALSE((*scope)[1].source_ts_us.has_value());
  EXPECT_EQ((*scope)[1].text, "second");
  EXPECT_TRUE(store->LoadScope("other", "u1")->empty());
}

TEST_P(StoreTest, IdempotencyKeyStoresOnce) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  AddBatch b;
  b.idempotency = IdempotencyRecord{"lb:r1", "hash1", "{\"ok\":1}"};
  b.memories = {testing::TestMemory("u", "x")};
  auto first = store->Add(b);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->duplicate);
  b.memories = {testing::TestMemory("u", "x")};
  b.idempotency->body_hash = "hash2";
  auto second = store->Add(b);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->duplicate);
  EXPECT_EQ(second->existing.body_hash, "hash1");
  EXPECT_EQ(second->existing.response_json, "{\"ok\":1}");
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 1u);
  // The record can be read without writing: per user, by key.
  auto found = store->FindIdempotency("", "lb:r1");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->body_hash, "hash1");
  EXPECT_EQ((*found)->response_json, "{\"ok\":1}");
  EXPECT_FALSE(store->FindIdempotency("", "lb:r2")->has_value());
  EXPECT_FALSE(store->FindIdempotency("another user", "lb:r1")->has_value());
}

TEST_P(StoreTest, ConcurrentWritersAreGroupCommitted) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        AddBatch b;
        b.idempotency = IdempotencyRecord{"k" + std::to_string(t * 100 + i), "h", "{}"};
        b.memories = {testing::TestMemory("u", "t" + std::to_string(t))};
        ASSERT_TRUE(store->Add(std::move(b)).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 320u);
  // PostgreSQL reports the planner's row estimate (exact counts would scan the table).
  if (!is_postgres()) {
    EXPECT_EQ(store->GetStats().memories, 320);
  }
}

TEST_P(StoreTest, SameKeyInOneGroupStoresOnce) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> fresh{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      AddBatch b;
      b.idempotency = IdempotencyRecord{"same", "h", "{}"};
      b.memories = {testing::TestMemory("u", "x")};
      auto r = store->Add(std::move(b));
      ASSERT_TRUE(r.ok());
      if (!r->duplicate) ++fresh;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(fresh.load(), 1);
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 1u);
}

TEST_P(StoreTest, DataSurvivesReopenAndImagesAreDeduplicated) {
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    AddBatch b;
    b.images = {{"abc", "image/png", std::string("\x89PNG\0\1", 6)}};
    b.memories = {testing::TestMemory("u", "with image")};
    ASSERT_TRUE(store->Add(b).ok());
    b.memories = {testing::TestMemory("u", "same image again")};
    ASSERT_TRUE(store->Add(b).ok());
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 2u);
  auto imgs = store->GetImages({"abc", "missing"});
  ASSERT_TRUE(imgs.ok());
  ASSERT_EQ(imgs->size(), 1u);
  EXPECT_EQ((*imgs)[0].bytes, std::string("\x89PNG\0\1", 6));
  EXPECT_TRUE(store->CheckWritable().ok());
}

TEST_P(StoreTest, FailedWriteLeavesNothingAndOthersCommit) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  AddBatch dup;
  auto m = testing::TestMemory("u", "a");
  dup.memories = {m, m};  // the same id twice violates UNIQUE: the whole batch must roll back
  EXPECT_FALSE(store->Add(dup).ok());
  AddBatch good;
  good.memories = {testing::TestMemory("u", "b")};
  EXPECT_TRUE(store->Add(good).ok());
  auto scope = store->LoadScope("w", "u");
  ASSERT_EQ(scope->size(), 1u);
  EXPECT_EQ((*scope)[0].text, "b");
}

TEST_P(StoreTest, PutVectorsStoresAndSkipsMissingMemories) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  AddBatch b;
  b.memories = {testing::TestMemory("u", "one"), testing::TestMemory("u", "two")};
  auto added = store->Add(b);
  ASSERT_TRUE(added.ok());
  ASSERT_TRUE(store
                  ->PutVectors({{added->stored[1].seq, "model-x", {0.6f, 0.8f}},
                                {added->stored[1].seq + 1000, "model-x", {1.0f, 0.0f}}})
                  .ok());
  auto scope = store->LoadScope("w", "u");
  ASSERT_TRUE(scope.ok());
  ASSERT_EQ(scope->size(), 2u);
  EXPECT_TRUE((*scope)[0].vector.empty());
  EXPECT_TRUE((*scope)[0].vector_model.empty());
  EXPECT_EQ((*scope)[1].vector, (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ((*scope)[1].vector_model, "model-x");
}

TEST_P(StoreTest, EveryFieldRoundTrips) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  MemoryRecord m = testing::TestMemory("u", "hello\nworld");
  m.agent_id = "ag";
  m.run_id = "run";
  m.session_id = "sess";
  m.role = "user";
  m.parts_json = R"([{"type":"image","sha256":"abc"}])";
  m.metadata_json = R"({"k":"v"})";
  m.source_ts_us = 7;
  m.position = 3;
  m.created_at_us = 11;
  m.updated_at_us = 12;
  m.vector = {0.25f, -0.5f};
  m.vector_model = "model-z";
  AddBatch b;
  b.memories = {m, testing::TestMemory("u", "no vector")};
  b.memories[1].vector_model = "ignored without a vector";
  auto added = store->Add(b);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  auto scope = store->LoadScope("w", "u");
  ASSERT_TRUE(scope.ok());
  ASSERT_EQ(scope->size(), 2u);
  const MemoryRecord& got = (*scope)[0];
  EXPECT_EQ(got.seq, added->stored[0].seq);
  EXPECT_EQ(got.id, m.id);
  EXPECT_EQ(got.workspace, "w");
  EXPECT_EQ(got.user_id, "u");
  EXPECT_EQ(got.agent_id, "ag");
  EXPECT_EQ(got.run_id, "run");
  EXPECT_EQ(got.session_id, "sess");
  EXPECT_EQ(got.role, "user");
  EXPECT_EQ(got.text, "hello\nworld");
  EXPECT_EQ(got.parts_json, m.parts_json);
  EXPECT_EQ(got.metadata_json, m.metadata_json);
  EXPECT_EQ(got.source_ts_us, 7);
  EXPECT_EQ(got.position, 3);
  EXPECT_EQ(got.created_at_us, 11);
  EXPECT_EQ(got.updated_at_us, 12);
  EXPECT_FALSE(got.expires_at_us.has_value());
  EXPECT_EQ(got.vector, m.vector);
  EXPECT_EQ(got.vector_model, "model-z");
  EXPECT_TRUE((*scope)[1].parts_json.empty());
  EXPECT_EQ((*scope)[1].metadata_json, "{}");
  EXPECT_TRUE((*scope)[1].vector.empty());
  EXPECT_TRUE((*scope)[1].vector_model.empty());

  MemoryChange c;
  c.record = testing::TestMemory("u", "an agent memory");
  c.record.expires_at_us = 99;
  auto agent = store->ApplyMemoryChanges({.workspace = "w", .changes = {c}});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  auto loaded = store->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].expires_at_us, 99);
  EXPECT_EQ((*loaded)[0].seq, agent->inserted[0].seq);
}

// --- PostgreSQL: several nodes on one database ---

TEST_P(StoreTest, AddAndPutVectorsBumpTheScopeVersion) {
  if (!is_postgres()) GTEST_SKIP() << "scope versions exist on shared (PostgreSQL) stores only";
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string scope = ScopeKeyMessages("w", "u");
  EXPECT_EQ(*store->ScopeVersion(scope), 0);
  AddBatch b;
  b.idempotency = IdempotencyRecord{"lb:v", "h", "{}"};
  b.memories = {testing::TestMemory("u", "one")};
  auto first = store->Add(b);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto v0 = store->ScopeVersion(scope);
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ(*v0, 1);

  // A duplicate writes nothing, the version included.
  b.memories = {testing::TestMemory("u", "one again")};
  ASSERT_TRUE(store->Add(b)->duplicate);
  EXPECT_EQ(*store->ScopeVersion(scope), *v0);

  // One write: one bump per scope it touches, however many rows.
  AddBatch two;
  two.memories = {testing::TestMemory("u", "two"), testing::TestMemory("u", "three"),
                  testing::TestMemory("u2", "elsewhere")};
  ASSERT_TRUE(store->Add(two).ok());
  const int64_t v1 = *store->ScopeVersion(scope);
  EXPECT_EQ(v1, *v0 + 1);
  EXPECT_EQ(*store->ScopeVersion(ScopeKeyMessages("w", "u2")), 1);

  auto delta = store->LoadScopeSince("w", "u", *v0);
  ASSERT_TRUE(delta.ok()) << delta.status().ToString();
  EXPECT_EQ(delta->version, v1);
  ASSERT_EQ(delta->upserts.size(), 2u);
  EXPECT_EQ(delta->upserts[0].text, "two");
  EXPECT_EQ(delta->upserts[1].text, "three");
  EXPECT_TRUE(delta->removed_ids.empty());
  auto none = store->LoadScopeSince("w", "u", v1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->version, v1);
  EXPECT_TRUE(none->upserts.empty());
  auto all = store->LoadScopeSince("w", "u", 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->upserts.size(), 3u);

  // A vector is a change of its row: the delta carries it.
  ASSERT_TRUE(store->PutVectors({{first->stored[0].seq, "model-x", {0.6f, 0.8f}}}).ok());
  const int64_t v2 = *store->ScopeVersion(scope);
  EXPECT_EQ(v2, v1 + 1);
  EXPECT_EQ(*store->ScopeVersion(ScopeKeyMessages("w", "u2")), 1);
  auto vectors = store->LoadScopeSince("w", "u", v1);
  ASSERT_TRUE(vectors.ok());
  EXPECT_EQ(vectors->version, v2);
  ASSERT_EQ(vectors->upserts.size(), 1u);
  EXPECT_EQ(vectors->upserts[0].id, first->stored[0].id);
  EXPECT_EQ(vectors->upserts[0].text, "one");
  EXPECT_EQ(vectors->upserts[0].vector, (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ(vectors->upserts[0].vector_model, "model-x");
}

TEST_P(StoreTest, OneIdempotencyKeyStoresOnceAcrossNodes) {
  if (!is_postgres()) GTEST_SKIP() << "several nodes share PostgreSQL stores only";
  auto node_a = OpenStore();
  auto node_b = OpenStore();
  ASSERT_NE(node_a, nullptr);
  ASSERT_NE(node_b, nullptr);
  std::latch start(8);
  std::atomic<int> fresh{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    Store* store = t % 2 == 0 ? node_a.get() : node_b.get();
    threads.emplace_back([&, store, t] {
      AddBatch b;
      b.idempotency = IdempotencyRecord{"lb:same", "h", "{\"n\":1}"};
      b.memories = {testing::TestMemory("u", "from thread " + std::to_string(t))};
      start.arrive_and_wait();
      auto r = store->Add(std::move(b));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (!r->duplicate) {
        ++fresh;
      } else {
        EXPECT_EQ(r->existing.body_hash, "h");
        EXPECT_EQ(r->existing.response_json, "{\"n\":1}");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(fresh.load(), 1);
  EXPECT_EQ(node_a->LoadScope("w", "u")->size(), 1u);
  EXPECT_EQ(node_b->LoadScope("w", "u")->size(), 1u);
  EXPECT_EQ(*node_a->ScopeVersion(ScopeKeyMessages("w", "u")), 1);
}

TEST_P(StoreTest, TextWithNulIsRefusedBeforeWriting) {
  if (!is_postgres()) GTEST_SKIP() << "SQLite stores NUL characters";
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  AddBatch b;
  b.memories = {testing::TestMemory("u", "fine"),
                testing::TestMemory("u", std::string("cut\0here", 8))};
  auto added = store->Add(b);
  EXPECT_EQ(added.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(added.status().message().find("NUL"), std::string::npos);
  EXPECT_TRUE(store->LoadScope("w", "u")->empty());
  EXPECT_EQ(*store->ScopeVersion(ScopeKeyMessages("w", "u")), 0);
  EXPECT_TRUE(store->LoadScope("w", std::string("u\0x", 3))->empty());
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(StoreTest);

}  // namespace
}  // namespace engram
