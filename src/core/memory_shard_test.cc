#include "core/memory_shard.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace engram {
namespace {

MemoryRecord Rec(int64_t seq, const std::string& user, const std::string& text,
                 const std::string& metadata = "{}") {
  MemoryRecord r;
  r.seq = seq;
  r.id = "m-" + std::to_string(seq);
  r.user_id = user;
  r.text = text;
  r.metadata_json = metadata;
  r.created_at_us = r.updated_at_us = seq;
  return r;
}

MemoryFilter UserFilter(const std::string& user) {
  MemoryFilter f;
  f.AndEquals("user_id", user);
  return f;
}

class MemoryShardTest : public ::testing::Test {
 protected:
  MemoryShardTest() : shard_(&analyzer_, MemoryShardOptions{.vectors = {.dim = 2}}) {}

  std::vector<std::string> Ids(const std::vector<MemoryHit>& hits) {
    std::vector<std::string> out;
    for (const auto& h : hits) out.push_back(h.memory.id);
    return out;
  }
  std::vector<MemoryHit> Search(const std::string& q, const MemoryFilter& f, size_t k = 10) {
    MemoryQuery query{.terms = analyzer_.AnalyzeQuery(q), .filter = &f, .k = k, .now_us = 100};
    auto hits = shard_.Search(query);
    EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    return hits.ok() ? *hits : std::vector<MemoryHit>{};
  }

  Analyzer analyzer_;
  MemoryShard shard_;
};

TEST_F(MemoryShardTest, SearchIsConfinedToTheFilteredScope) {
  shard_.Upsert(Rec(1, "alice", "alice likes green tea"));
  shard_.Upsert(Rec(2, "bob", "bob likes green tea"));
  shard_.Upsert(Rec(3, "alice", "alice owns a bicycle"));
  EXPECT_EQ(Ids(Search("green tea", UserFilter("alice"))), std::vector<std::string>{"m-1"});
  EXPECT_EQ(Ids(Search("green tea", UserFilter("bob"))), std::vector<std::string>{"m-2"});
  for (const auto& h : Search("tea", UserFilter("alice"))) {
    EXPECT_GT(h.score, 0.0f);
    EXPECT_LE(h.score, 1.0f);
  }
  MemoryQuery unscoped{.terms = analyzer_.AnalyzeQuery("tea"), .now_us = 100};
  EXPECT_EQ(shard_.Search(unscoped).status().code(), StatusCode::kInvalidParameter);
}

TEST_F(MemoryShardTest, FilterAppliesBeforeTopK) {
  // 50 better matches that the filter rejects must not crowd out the one it accepts.
  for (int i = 1; i <= 50; ++i) {
    shard_.Upsert(Rec(i, "u", "kiwi kiwi kiwi fruit", R"({"kind":"common"})"));
  }
  shard_.Upsert(Rec(51, "u", "kiwi and many other words in a long memory", R"({"kind":"rare"})"));
  auto f = MemoryFilter::Parse(nlohmann::json{{"metadata.kind", "rare"}}, "filters", {});
  ASSERT_TRUE(f.ok());
  f->AndEquals("user_id", "u");
  EXPECT_EQ(Ids(Search("kiwi", *f, 1)), std::vector<std::string>{"m-51"});
}

TEST_F(MemoryShardTest, UpsertReplacesAndRemoveForgets) {
  shard_.Upsert(Rec(1, "u", "the code word is alpha"));
  MemoryRecord changed = Rec(2, "u", "the code word is omega");
  changed.id = "m-1";
  shard_.Upsert(changed);
  EXPECT_TRUE(Search("alpha", UserFilter("u")).empty());
  EXPECT_EQ(Ids(Search("omega", UserFilter("u"))), std::vector<std::string>{"m-1"});
  EXPECT_EQ(shard_.size(), 1u);
  shard_.Remove("m-1");
  EXPECT_TRUE(Search("omega", UserFilter("u")).empty());
  EXPECT_FALSE(shard_.Get("m-1", 100).has_value());
  EXPECT_EQ(shard_.size(), 0u);
}

TEST_F(MemoryShardTest, ExpiredMemoriesAreHidden) {
  MemoryRecord r = Rec(1, "u", "a coupon for pizza");
  r.expires_at_us = 50;
  shard_.Upsert(r);
  EXPECT_TRUE(Search("coupon", UserFilter("u")).empty());
  EXPECT_FALSE(shard_.Get("m-1", 100).has_value());
  EXPECT_TRUE(shard_.Get("m-1", 10).has_value());
  EXPECT_EQ(shard_.Expired(100).size(), 1u);
}

TEST_F(MemoryShardTest, VectorsRankAndMetadataOnlyUpdateKeepsThem) {
  MemoryRecord a = Rec(1, "u", "first memory");
  a.vector = {1.0f, 0.0f};
  a.vector_model = "";
  MemoryRecord b = Rec(2, "u", "second memory");
  b.vector = {0.0f, 1.0f};
  shard_.Upsert(a);
  shard_.Upsert(b);
  MemoryFilter f = UserFilter("u");
  MemoryQuery q{.vector = {0.0f, 1.0f}, .filter = &f, .k = 2, .now_us = 100};
  auto hits = shard_.Search(q);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_EQ((*hits)[0].memory.id, "m-2");
  EXPECT_NEAR((*hits)[0].similarity, 1.0f, 0.02f);
  MemoryRecord meta_only = Rec(2, "u", "second memory", R"({"x":1})");
  shard_.Upsert(meta_only);
  EXPECT_TRUE(shard_.MissingVectors().empty());
  auto again = shard_.Search(q);
  EXPECT_EQ((*again)[0].memory.id, "m-2");
}

TEST_F(MemoryShardTest, ListsNewestFirstWithTotal) {
  for (int i = 1; i <= 5; ++i) shard_.Upsert(Rec(i, "u", "memory " + std::to_string(i)));
  shard_.Upsert(Rec(6, "v", "someone else"));
  size_t total = 0;
  auto page = shard_.List(UserFilter("u"), 100, 1, 2, &total);
  EXPECT_EQ(total, 5u);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].id, "m-4");
  EXPECT_EQ(page[1].id, "m-3");
}

}  // namespace
}  // namespace engram
