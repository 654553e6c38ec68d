#include "index/fusion.h"

#include <gtest/gtest.h>

#include <cmath>

namespace engram {
namespace {

TEST(FusionPartsTest, PartsAddUpToEachScoreAndChangeNothing) {
  const std::vector<ScoredDoc> bm25 = {{1, 10}, {2, 6}, {3, 5.8f}, {5, 1}};
  const std::vector<ScoredDoc> vec = {{3, 0.9f}, {1, 0.5f}, {4, 0.2f}};
  const std::function<float(DocId)> prior = [](DocId d) { return d == 3 ? 1.0f : 0.25f; };
  const std::function<float(DocId)> scale = [](DocId d) { return d == 2 ? 0.5f : 1.0f; };
  for (FusionMethod method : {FusionMethod::kZScore, FusionMethod::kScoreSum, FusionMethod::kRrf}) {
    SCOPED_TRACE(static_cast<int>(method));
    const FusionOptions options{.method = method, .vector_weight = 0.4f, .prior_weight = 0.2f};
    const auto plain = Fuse(bm25, vec, 10, options, &prior, &scale);
    std::vector<FusionParts> parts;
    const auto explained = Fuse(bm25, vec, 10, options, &prior, &scale, &parts);
    ASSERT_EQ(plain.size(), 5u);
    ASSERT_EQ(explained.size(), plain.size());
    ASSERT_EQ(parts.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(explained[i].doc, plain[i].doc);
      EXPECT_EQ(explained[i].score, plain[i].score) << "explaining must not move a score";
      const FusionParts* p = FindParts(parts, plain[i].doc);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(p->score, plain[i].score);
      const float sum = p->lexical_part + p->vector_part + p->prior_part;
      const float fused = method == FusionMethod::kZScore ? 1.0f / (1.0f + std::exp(-sum)) : sum;
      EXPECT_NEAR(fused * p->scale, p->score, 1e-5);
    }
    for (size_t i = 1; i < parts.size(); ++i) EXPECT_LT(parts[i - 1].doc, parts[i].doc);
    const FusionParts* three = FindParts(parts, 3);
    ASSERT_NE(three, nullptr);
    EXPECT_EQ(three->lexical, 5.8f);
    EXPECT_EQ(three->vector, 0.9f);
    EXPECT_EQ(three->prior, 1.0f);
    EXPECT_GT(three->prior_part, 0.0f);
    const FusionParts* two = FindParts(parts, 2);
    ASSERT_NE(two, nullptr);
    EXPECT_EQ(two->scale, 0.5f);
    EXPECT_FALSE(two->vector.has_value()) << "the vector retriever did not return it";
    EXPECT_EQ(FindParts(parts, 99), nullptr);
  }
}

// Three texts that say nearly the same thing (cosines a hundredth apart, no words in common with
// the query): those hundredths are not evidence, so the date prior picks the one it favours. On
// their own deviation they would be 1.2 standard deviations apart and outweigh it.
TEST(FusionZScoreTest, NearlyEqualCosinesDoNotOutweighThePrior) {
  const std::vector<ScoredDoc> vec = {{1, 0.73f}, {2, 0.72f}, {3, 0.71f}};
  const std::function<float(DocId)> prior = [](DocId d) { return d == 3 ? 1.0f : 0.0f; };
  const FusionOptions options{.method = FusionMethod::kZScore, .prior_weight = 0.8f};
  const auto fused = Fuse({}, vec, 3, options, &prior);
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_EQ(fused[0].doc, 3u);
  // Cosines far apart still outweigh the prior, as they did.
  const std::vector<ScoredDoc> apart = {{1, 0.73f}, {2, 0.52f}, {3, 0.31f}};
  const auto ranked = Fuse({}, apart, 3, options, &prior);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].doc, 1u);
  // Without the floor, the deviation of the three decides (what the floor is for).
  FusionOptions unfloored = options;
  unfloored.min_vector_spread = 0;
  EXPECT_EQ(Fuse({}, vec, 3, unfloored, &prior)[0].doc, 1u);
}

TEST(FusionPartsTest, AnAbsentRetrieverAddsNothing) {
  std::vector<FusionParts> parts;
  const auto fused =
      Fuse({{1, 2}, {2, 1}}, {}, 10, {.method = FusionMethod::kZScore}, nullptr, nullptr, &parts);
  ASSERT_EQ(parts.size(), 2u);
  for (const FusionParts& p : parts) {
    EXPECT_EQ(p.vector_part, 0.0f);
    EXPECT_FALSE(p.vector.has_value());
    EXPECT_EQ(p.prior_part, 0.0f);
    EXPECT_EQ(p.scale, 1.0f);
  }
  EXPECT_GT(FindParts(parts, 1)->lexical_part, FindParts(parts, 2)->lexical_part);
  EXPECT_EQ(fused.front().doc, 1u);
}

}  // namespace
}  // namespace engram
