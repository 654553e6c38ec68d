// Store: the leaderboard data lifecycle on every backend — idempotency per user, deleting a user
// (and, on SQLite, leaving no readable copy on disk), idle users, idempotency expiry.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/ids.h"
#include "store_backends.h"

namespace engram {
namespace {

class LifecycleStoreTest : public testing::StoreBackendTest {
 protected:
  static MemoryRecord Mem(const std::string& user, const std::string& text,
                          int64_t created_at_us = 1) {
    MemoryRecord m;
    m.id = NewId("m");
    m.workspace = "w";
    m.user_id = user;
    m.text = text;
    m.created_at_us = m.updated_at_us = created_at_us;
    return m;
  }
  static ImageBlob Image(const std::string& bytes) {
    return {std::string(64, bytes[0]), "image/png", bytes};
  }
  // A message showing `image` (parts as LeaderboardService stores them).
  static MemoryRecord WithImage(MemoryRecord m, const ImageBlob& image) {
    m.parts_json = R"([{"text":"look","type":"text"},{"mime":"image/png","sha256":")" +
                   image.sha256 + R"(","type":"image"}])";
    return m;
  }
  static AddBatch Batch(const std::string& user, const std::string& request_id,
                        std::vector<MemoryRecord> memories) {
    AddBatch b;
    b.idempotency = IdempotencyRecord{"leaderboard:" + request_id, "h-" + user, "{}", user};
    b.memories = std::move(memories);
    return b;
  }
};

TEST_P(LifecycleStoreTest, TheSameRequestIdOfTwoUsersStoresBoth) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto a = store->Add(Batch("ua", "r1", {Mem("ua", "from a")}));
  auto b = store->Add(Batch("ub", "r1", {Mem("ub", "from b")}));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->duplicate);
  EXPECT_FALSE(b->duplicate);
  EXPECT_EQ(store->LoadScope("w", "ua")->size(), 1u);
  EXPECT_EQ(store->LoadScope("w", "ub")->size(), 1u);
  // Per user the key still stores once.
  auto again = store->Add(Batch("ua", "r1", {Mem("ua", "from a")}));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->existing.body_hash, "h-ua");
}

TEST_P(LifecycleStoreTest, DeleteUserRemovesItsMessagesVectorsImagesAndRecords) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const ImageBlob shared = Image("shared-bytes"), own = Image("own-bytes");
  AddBatch gone = Batch("gone", "r1",
                        {WithImage(Mem("gone", "one"), shared), WithImage(Mem("gone", "two"), own),
                         Mem("gone", "three")});
  gone.images = {shared, own};
  auto stored = store->Add(gone);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_TRUE(store->PutVectors({{stored->stored[0].seq, "m", {1.0f, 0.0f}}}).ok());
  AddBatch kept = Batch("kept", "r1", {WithImage(Mem("kept", "mine"), shared)});
  kept.images = {shared};
  ASSERT_TRUE(store->Add(kept).ok());

  auto deleted = store->DeleteLeaderboardUser("w", "gone");
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(deleted->messages, 3);
  EXPECT_EQ(deleted->vectors, 1);
  EXPECT_EQ(deleted->images, 1) << "the image another user's message shows stays";
  EXPECT_EQ(deleted->idempotency, 1);
  EXPECT_TRUE(store->LoadScope("w", "gone")->empty());
  EXPECT_EQ(store->LoadScope("w", "kept")->size(), 1u);
  auto images = store->GetImages({shared.sha256, own.sha256});
  ASSERT_TRUE(images.ok());
  ASSERT_EQ(images->size(), 1u);
  EXPECT_EQ((*images)[0].sha256, shared.sha256);

  // Idempotent: nothing left, zero counts.
  auto second = store->DeleteLeaderboardUser("w", "gone");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->messages + second->images + second->vectors + second->idempotency, 0);
  // Its request_id no longer answers from memory: the same add stores again.
  auto re_add = store->Add(Batch("gone", "r1", {Mem("gone", "back")}));
  ASSERT_TRUE(re_add.ok());
  EXPECT_FALSE(re_add->duplicate);
  // Another workspace's user of that name is not touched.
  MemoryRecord other = Mem("kept", "elsewhere");
  other.workspace = "w2";
  AddBatch elsewhere;
  elsewhere.memories = {other};
  ASSERT_TRUE(store->Add(elsewhere).ok());
  ASSERT_TRUE(store->DeleteLeaderboardUser("w", "kept").ok());
  EXPECT_EQ(store->LoadScope("w2", "kept")->size(), 1u);
}

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST_P(LifecycleStoreTest, DeletedTextLeavesNoReadableCopyInTheDataDirectory) {
  if (is_postgres()) GTEST_SKIP() << "files of the SQLite data directory";
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string marker = "zqxvmarker" + NewId("k");
  // Enough rows (and long ones, on overflow pages) that the text spans several pages and the WAL.
  for (int i = 0; i < 20; ++i) {
    std::vector<MemoryRecord> ms;
    for (int j = 0; j < 20; ++j) {
      ms.push_back(Mem("secret", marker + " " + std::string(j == 0 ? 6000 : 50, 'x')));
    }
    ASSERT_TRUE(store->Add(Batch("secret", "r" + std::to_string(i), std::move(ms))).ok());
  }
  ASSERT_TRUE(store->Add(Batch("other", "r", {Mem("other", "unrelated text")})).ok());
  auto deleted = store->DeleteLeaderboardUser("w", "secret");
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(deleted->messages, 400);
  // The store is still open: the deletion itself must have removed every copy.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data_dir())) {
    if (!entry.is_regular_file()) continue;
    EXPECT_EQ(ReadAll(entry.path()).find(marker), std::string::npos)
        << entry.path() << " still holds the deleted text";
  }
  EXPECT_EQ(store->LoadScope("w", "other")->size(), 1u);
}

TEST_P(LifecycleStoreTest, IdleUsersAreThoseWhoseLatestMessageIsOld) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Add(Batch("old", "r", {Mem("old", "a", 100), Mem("old", "b", 200)})).ok());
  ASSERT_TRUE(store->Add(Batch("recent", "r", {Mem("recent", "a", 100)})).ok());
  ASSERT_TRUE(store->Add(Batch("recent", "r2", {Mem("recent", "b", 900)})).ok());
  auto idle = store->LeaderboardUsersIdleSince("w", 500, 10);
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  EXPECT_EQ(*idle, std::vector<std::string>{"old"});
  EXPECT_EQ(store->LeaderboardUsersIdleSince("w", 1000, 10)->size(), 2u);
  EXPECT_EQ(store->LeaderboardUsersIdleSince("w", 1000, 1)->size(), 1u);
  EXPECT_TRUE(store->LeaderboardUsersIdleSince("other", 1000, 10)->empty());
}

TEST_P(LifecycleStoreTest, ExpiredIdempotencyRecordsAreDeleted) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Add(Batch("u", "r1", {Mem("u", "x")})).ok());
  const int64_t now_s = static_cast<int64_t>(std::time(nullptr));
  auto none = store->ExpireIdempotency(now_s - 3600);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0);
  EXPECT_TRUE(store->Add(Batch("u", "r1", {Mem("u", "x")}))->duplicate);
  auto expired = store->ExpireIdempotency(now_s + 3600);
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(*expired, 1);
  EXPECT_FALSE(store->Add(Batch("u", "r1", {Mem("u", "x")}))->duplicate)
      << "an expired request_id stores again";
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(LifecycleStoreTest);

}  // namespace
}  // namespace engram
