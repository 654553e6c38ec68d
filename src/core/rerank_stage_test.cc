#include "core/rerank_stage.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/search_explanation.h"

namespace engram {
namespace {

struct Hit {
  std::string text;
  float score = 0;
};

// Answers a fixed ranking (or an error), and remembers what it was offered.
class ScriptedReranker final : public Reranker {
 public:
  explicit ScriptedReranker(Result<std::vector<size_t>> answer) : answer_(std::move(answer)) {}
  Result<std::vector<size_t>> Rerank(
      const std::string& query, const std::vector<std::string_view>& candidates) const override {
    last_query = query;
    offered.assign(candidates.begin(), candidates.end());
    return answer_;
  }
  mutable std::string last_query;
  mutable std::vector<std::string> offered;

 private:
  Result<std::vector<size_t>> answer_;
};

std::vector<Hit> Hits() {
  return {{"a", 0.9f}, {"b", 0.8f}, {"c", 0.5f}, {"d", 0.4f}, {"e", 0.1f}};
}
std::string_view TextOf(const Hit& h) { return h.text; }

std::string Order(const std::vector<Hit>& hits) {
  std::string s;
  for (const auto& h : hits) s += h.text;
  return s;
}

TEST(RerankStageTest, RankedFirstThenTheRestOfTheBlockThenTheTail) {
  ScriptedReranker reranker(std::vector<size_t>{2, 0});
  RerankStage stage("test");
  stage.Set(&reranker, 4);
  auto hits = Hits();
  stage.Apply("q", &hits, TextOf);
  EXPECT_EQ(Order(hits), "cabde");  // c, a ranked; b, d left out; e beyond the block
  EXPECT_EQ(reranker.offered, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(reranker.last_query, "q");
  // The block's scores handed out again in decreasing order; the tail keeps its own.
  const std::vector<float> scores = {0.9f, 0.8f, 0.5f, 0.4f, 0.1f};
  for (size_t i = 0; i < hits.size(); ++i) EXPECT_FLOAT_EQ(hits[i].score, scores[i]) << i;
  EXPECT_EQ(stage.calls(), 1u);
  EXPECT_EQ(stage.failures(), 0u);
}

TEST(RerankStageTest, AnExplainedHitRemembersTheRankItWasOfferedAt) {
  struct ExplainedHit {
    std::string text;
    float score = 0;
    std::optional<SearchExplanation> explain;
  };
  std::vector<ExplainedHit> hits;
  for (const Hit& h : Hits()) hits.push_back({h.text, h.score, SearchExplanation{}});
  ScriptedReranker reranker(std::vector<size_t>{2, 0});
  RerankStage stage("test");
  stage.Set(&reranker, 4);
  stage.Apply("q", &hits, [](const ExplainedHit& h) { return std::string_view(h.text); });
  std::string ranks;
  for (const auto& h : hits) {
    ranks += h.explain->rank_before_rerank ? std::to_string(*h.explain->rank_before_rerank) : "-";
  }
  EXPECT_EQ(ranks, "3124-");  // c was offered third; e lay beyond the block
}

TEST(RerankStageTest, AFailureLeavesTheHitsAsTheyWere) {
  ScriptedReranker reranker(Status::Unavailable("endpoint down"));
  RerankStage stage("test");
  stage.Set(&reranker, 30);
  auto hits = Hits();
  stage.Apply("q", &hits, TextOf);
  EXPECT_EQ(Order(hits), "abcde");
  EXPECT_FLOAT_EQ(hits[0].score, 0.9f);
  EXPECT_EQ(stage.failures(), 1u);
}

TEST(RerankStageTest, NothingToDoWithoutARerankerOrWithOneHit) {
  RerankStage off("test");
  auto hits = Hits();
  off.Apply("q", &hits, TextOf);
  EXPECT_EQ(Order(hits), "abcde");
  EXPECT_EQ(off.calls(), 0u);

  ScriptedReranker reranker(std::vector<size_t>{0});
  RerankStage on("test");
  on.Set(&reranker, 30);
  std::vector<Hit> one = {{"a", 1.0f}};
  on.Apply("q", &one, TextOf);
  EXPECT_EQ(on.calls(), 0u);  // a single hit has no order to change
}

}  // namespace
}  // namespace engram
