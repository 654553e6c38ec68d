#include "embed/query_embedding_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace engram {
namespace {

// A deterministic embedder that counts texts embedded: vector = {length, first byte}; "fail"
// fails.
class CountingEmbedder final : public Embedder {
 public:
  const std::string& model_id() const override { return id_; }
  int dimension() const override { return 2; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) {
      if (t == "fail") return Status::Unavailable("model down");
      ++texts_embedded;
      out.push_back({static_cast<float>(t.size()), t.empty() ? 0.0f : static_cast<float>(t[0])});
    }
    return out;
  }
  mutable std::atomic<int> texts_embedded{0};

 private:
  std::string id_ = "counting";
};

TEST(CachingEmbedderTest, RepeatedQueriesSkipTheModelAndGetTheSameVector) {
  CountingEmbedder inner;
  CachingEmbedder cache(&inner, {.max_entries = 8});
  auto a = cache.EmbedQuery("where did Alice travel");
  auto b = cache.EmbedQuery("where did Alice travel");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(inner.texts_embedded.load(), 1);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
  // The model is case-sensitive: another spelling is another query.
  auto c = cache.EmbedQuery("Where did Alice travel");
  ASSERT_TRUE(c.ok());
  EXPECT_NE((*c)[1], (*a)[1]);
  EXPECT_EQ(inner.texts_embedded.load(), 2);
  // Stored texts are not cached.
  ASSERT_TRUE(cache.EmbedBatch({"where did Alice travel"}).ok());
  EXPECT_EQ(inner.texts_embedded.load(), 3);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(CachingEmbedderTest, EvictsTheLeastRecentlyUsedAndNeverCachesFailures) {
  CountingEmbedder inner;
  CachingEmbedder cache(&inner, {.max_entries = 2});
  ASSERT_TRUE(cache.EmbedQuery("a").ok());
  ASSERT_TRUE(cache.EmbedQuery("b").ok());
  ASSERT_TRUE(cache.EmbedQuery("a").ok());  // a is now the most recent
  ASSERT_TRUE(cache.EmbedQuery("c").ok());  // evicts b
  EXPECT_EQ(cache.size(), 2u);
  const int before = inner.texts_embedded.load();
  ASSERT_TRUE(cache.EmbedQuery("a").ok());
  EXPECT_EQ(inner.texts_embedded.load(), before);
  ASSERT_TRUE(cache.EmbedQuery("b").ok());
  EXPECT_EQ(inner.texts_embedded.load(), before + 1);

  EXPECT_FALSE(cache.EmbedQuery("fail").ok());
  EXPECT_FALSE(cache.EmbedQuery("fail").ok());
  EXPECT_EQ(cache.hits(), 2u);
}

TEST(CachingEmbedderTest, ZeroEntriesTurnsItOff) {
  CountingEmbedder inner;
  CachingEmbedder cache(&inner, {.max_entries = 0});
  ASSERT_TRUE(cache.EmbedQuery("a").ok());
  ASSERT_TRUE(cache.EmbedQuery("a").ok());
  EXPECT_EQ(inner.texts_embedded.load(), 2);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.hits(), 0u);
}

TEST(CachingEmbedderTest, ConcurrentCallersGetTheirOwnQueriesVectors) {
  CountingEmbedder inner;
  CachingEmbedder cache(&inner, {.max_entries = 16});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        // 32 distinct queries over a 16-entry cache: hits, misses and evictions interleave.
        const std::string q(static_cast<size_t>(1 + (i * 7 + t) % 32), 'q');
        auto v = cache.EmbedQuery(q);
        if (!v.ok() || (*v)[0] != static_cast<float>(q.size())) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.size(), 16u);
  EXPECT_EQ(cache.hits() + cache.misses(), 8u * 500u);
}

}  // namespace
}  // namespace engram
