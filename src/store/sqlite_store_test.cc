#include "store/sqlite_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "common/ids.h"

namespace engram {
namespace {

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-store-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/engram.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<SqliteStore> OpenStore() {
    auto s = SqliteStore::Open({.path = path_});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }

  static MemoryRecord Mem(const std::string& user, const std::string& text) {
    MemoryRecord m;
    m.id = NewId("m");
    m.workspace = "w";
    m.user_id = user;
    m.text = text;
    m.created_at_us = m.updated_at_us = 1;
    return m;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, AddThenLoadScopeInOrder) {
  auto store = OpenStore();
  EXPECT_GE(store->schema_version(), 1);
  AddBatch b;
  b.memories = {Mem("u1", "first"), Mem("u1", "second"), Mem("u2", "other")};
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

TEST_F(SqliteStoreTest, IdempotencyKeyStoresOnce) {
  auto store = OpenStore();
  AddBatch b;
  b.idempotency = IdempotencyRecord{"lb:r1", "hash1", "{\"ok\":1}"};
  b.memories = {Mem("u", "x")};
  auto first = store->Add(b);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->duplicate);
  b.memories = {Mem("u", "x")};
  b.idempotency->body_hash = "hash2";
  auto second = store->Add(b);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->duplicate);
  EXPECT_EQ(second->existing.body_hash, "hash1");
  EXPECT_EQ(second->existing.response_json, "{\"ok\":1}");
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 1u);
}

TEST_F(SqliteStoreTest, ConcurrentWritersAreGroupCommitted) {
  auto store = OpenStore();
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        AddBatch b;
        b.idempotency = IdempotencyRecord{"k" + std::to_string(t * 100 + i), "h", "{}"};
        b.memories = {Mem("u", "t" + std::to_string(t))};
        ASSERT_TRUE(store->Add(std::move(b)).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 320u);
  EXPECT_EQ(store->GetStats().memories, 320);
}

TEST_F(SqliteStoreTest, SameKeyInOneGroupStoresOnce) {
  auto store = OpenStore();
  std::vector<std::thread> threads;
  std::atomic<int> fresh{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      AddBatch b;
      b.idempotency = IdempotencyRecord{"same", "h", "{}"};
      b.memories = {Mem("u", "x")};
      auto r = store->Add(std::move(b));
      ASSERT_TRUE(r.ok());
      if (!r->duplicate) ++fresh;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(fresh.load(), 1);
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 1u);
}

TEST_F(SqliteStoreTest, DataSurvivesReopenAndImagesAreDeduplicated) {
  {
    auto store = OpenStore();
    AddBatch b;
    b.images = {{"abc", "image/png", std::string("\x89PNG\0\1", 6)}};
    b.memories = {Mem("u", "with image")};
    ASSERT_TRUE(store->Add(b).ok());
    b.memories = {Mem("u", "same image again")};
    ASSERT_TRUE(store->Add(b).ok());
  }
  auto store = OpenStore();
  EXPECT_EQ(store->LoadScope("w", "u")->size(), 2u);
  auto imgs = store->GetImages({"abc", "missing"});
  ASSERT_TRUE(imgs.ok());
  ASSERT_EQ(imgs->size(), 1u);
  EXPECT_EQ((*imgs)[0].bytes, std::string("\x89PNG\0\1", 6));
  EXPECT_TRUE(store->CheckWritable().ok());
}

TEST_F(SqliteStoreTest, FailedWriteLeavesNothingAndOthersCommit) {
  auto store = OpenStore();
  AddBatch dup;
  auto m = Mem("u", "a");
  dup.memories = {m, m};  // the same id twice violates UNIQUE: the whole batch must roll back
  EXPECT_FALSE(store->Add(dup).ok());
  AddBatch good;
  good.memories = {Mem("u", "b")};
  EXPECT_TRUE(store->Add(good).ok());
  auto scope = store->LoadScope("w", "u");
  ASSERT_EQ(scope->size(), 1u);
  EXPECT_EQ((*scope)[0].text, "b");
}

}  // namespace
}  // namespace engram
