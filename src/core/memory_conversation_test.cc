// V4 verbatim memories as turns of a conversation: windowed BM25, neighbours and the date prior
// reach them as they reach Leaderboard turns, confined to the search's scope and filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/memory_shard.h"
#include "core/memory_shard_test_support.h"

namespace engram {
namespace {

constexpr int64_t kDay = 86400LL * 1000 * 1000;

MemoryRecord Turn(int64_t seq, const std::string& user, const std::string& session,
                  const std::string& text, int64_t time_us) {
  MemoryRecord r;
  r.seq = seq;
  r.id = "m-" + std::to_string(seq);
  r.user_id = user;
  r.session_id = session;
  r.role = std::string(kVerbatimRole);
  r.text = text;
  r.source_ts_us = time_us;
  r.created_at_us = r.updated_at_us = 1000 + seq;
  return r;
}

using testing::Rec;
using testing::UserFilter;

class MemoryConversationTest : public ::testing::Test {
 protected:
  MemoryConversationTest() : shard_(&analyzer_, MemoryShardOptions{.vectors = {.dim = 2}}) {}

  std::vector<std::string> Ids(const std::string& q, const MemoryFilter& f, size_t k = 10,
                               bool steps = true) {
    MemoryQuery query{.terms = analyzer_.AnalyzeQuery(q), .filter = &f, .k = k, .now_us = 1};
    query.conversation_steps = steps;
    auto hits = shard_.Search(query);
    EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    std::vector<std::string> out;
    if (hits.ok()) {
      for (const auto& h : *hits) out.push_back(h.memory.id);
    }
    return out;
  }
  static bool Has(const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  }

  Analyzer analyzer_;
  MemoryShard shard_;
};

TEST_F(MemoryConversationTest, TheReplyToAMatchingQuestionIsFound) {
  // Written out of order: the turn order comes from the message times.
  shard_.Upsert(Turn(2, "alice", "s1", "Definitely, and some old friends.", 20));
  shard_.Upsert(Turn(1, "alice", "s1", "Will you visit Lisbon in spring?", 10));
  shard_.Upsert(Turn(3, "alice", "s1", "I bought new running shoes.", 30));
  const auto ids = Ids("visit Lisbon", UserFilter("alice"));
  ASSERT_FALSE(ids.empty());
  EXPECT_TRUE(Has(ids, "m-1"));
  EXPECT_TRUE(Has(ids, "m-2")) << "the reply shares the question's window and is its neighbour";
  EXPECT_EQ(Ids("visit Lisbon", UserFilter("alice"), 10, /*steps=*/false),
            std::vector<std::string>{"m-1"})
      << "without the conversation steps only the matching turn";
}

TEST_F(MemoryConversationTest, ConversationsNeverCrossUsersSessionsOrFilters) {
  shard_.Upsert(Turn(1, "alice", "s1", "Will you visit Lisbon in spring?", 10));
  shard_.Upsert(Turn(2, "bob", "s1", "Bob's secret reply.", 20));  // same session id, other user
  shard_.Upsert(Turn(3, "alice", "s2", "A turn of another session.", 15));
  MemoryRecord tagged = Turn(4, "alice", "s1", "Tagged reply.", 20);
  tagged.metadata_json = R"({"topic":"private"})";
  shard_.Upsert(tagged);
  const auto ids = Ids("visit Lisbon", UserFilter("alice"));
  EXPECT_FALSE(Has(ids, "m-2")) << "another user's turn is never a neighbour";
  EXPECT_FALSE(Has(ids, "m-3")) << "another session's turn is not a neighbour";
  EXPECT_TRUE(Has(ids, "m-4"));

  auto public_only = MemoryFilter::Parse(
      nlohmann::json::parse(
          R"({"AND": [{"user_id": "alice"}, {"metadata.topic": {"ne": "private"}}]})"),
      "filters", {});
  ASSERT_TRUE(public_only.ok()) << public_only.status().ToString();
  const auto filtered = Ids("visit Lisbon", *public_only);
  EXPECT_TRUE(Has(filtered, "m-1"));
  EXPECT_FALSE(Has(filtered, "m-4")) << "a neighbour the filter rejects is not returned";
}

TEST_F(MemoryConversationTest, ARunWithoutASessionIsAConversation) {
  // Sessions stored as runs (no session id): the run is the conversation, and a search by user
  // ranks across the user's runs.
  MemoryRecord q = Turn(1, "alice", "", "Will you visit Lisbon in spring?", 10);
  MemoryRecord reply = Turn(2, "alice", "", "Definitely, and some old friends.", 20);
  MemoryRecord other_run = Turn(3, "alice", "", "Another run's turn.", 15);
  MemoryRecord no_run = Turn(4, "alice", "", "A turn of no run.", 12);
  q.run_id = reply.run_id = "r1";
  other_run.run_id = "r2";
  for (const MemoryRecord& r : {q, reply, other_run, no_run}) shard_.Upsert(r);
  const auto ids = Ids("visit Lisbon", UserFilter("alice"));
  EXPECT_TRUE(Has(ids, "m-1"));
  EXPECT_TRUE(Has(ids, "m-2")) << "the run's next turn is the question's neighbour";
  EXPECT_FALSE(Has(ids, "m-3")) << "another run's turn is not a neighbour";
  EXPECT_FALSE(Has(ids, "m-4")) << "a turn of neither session nor run has no neighbours";
}

TEST_F(MemoryConversationTest, ExtractedMemoriesFollowTheirMessagesTimes) {
  // Extracted facts (infer: true) carry the time of the messages they came from: in a session,
  // they are a conversation in that order; without a message time, they have no neighbours.
  MemoryRecord a = Turn(1, "alice", "s1", "Alice plans to visit Lisbon.", 10);
  MemoryRecord b = Turn(2, "alice", "s1", "Alice owns a red bicycle.", 20);
  a.role = b.role = "";
  shard_.Upsert(a);
  shard_.Upsert(b);
  EXPECT_TRUE(Has(Ids("visit Lisbon", UserFilter("alice")), "m-2"));
  a.source_ts_us.reset();
  b.source_ts_us.reset();
  shard_.Upsert(a);
  shard_.Upsert(b);
  EXPECT_EQ(Ids("visit Lisbon", UserFilter("alice")), std::vector<std::string>{"m-1"});
}

TEST_F(MemoryConversationTest, RemovedAndMovedTurnsLeaveTheConversation) {
  shard_.Upsert(Turn(1, "alice", "s1", "Will you visit Lisbon in spring?", 10));
  shard_.Upsert(Turn(2, "alice", "s1", "First reply.", 20));
  shard_.Upsert(Turn(3, "alice", "s1", "Second reply.", 30));
  shard_.Remove("m-2");
  auto ids = Ids("visit Lisbon", UserFilter("alice"));
  EXPECT_FALSE(Has(ids, "m-2"));
  EXPECT_TRUE(Has(ids, "m-3")) << "the next turn becomes the question's neighbour";
  shard_.Upsert(Turn(3, "alice", "s1", "Second reply.", 5 * kDay));
  shard_.Upsert(Turn(4, "alice", "s1", "Now the reply.", 20));
  ids = Ids("visit Lisbon", UserFilter("alice"));
  EXPECT_TRUE(Has(ids, "m-4"));
}

TEST_F(MemoryConversationTest, TurnsNearADateTheQueryNamesRankFirst) {
  const int64_t june = 1685577600LL * 1000 * 1000;   // 2023-06-01
  const int64_t march = 1677628800LL * 1000 * 1000;  // 2023-03-01
  shard_.Upsert(Turn(1, "alice", "s1", "We went hiking.", march));
  shard_.Upsert(Turn(2, "alice", "s2", "We went hiking.", june + kDay));
  MemoryFilter f = UserFilter("alice");
  MemoryQuery query{
      .terms = analyzer_.AnalyzeQuery("hiking in June 2023"), .filter = &f, .k = 2, .now_us = 1};
  query.dates = TimeRange{june, june + 30 * kDay};
  auto hits = shard_.Search(query);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_EQ(hits->front().memory.id, "m-2");
  query.dates.reset();
  hits = shard_.Search(query);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(hits->front().memory.id, "m-1") << "equal texts: write order decides without a date";
}

TEST_F(MemoryConversationTest, AShortQuestionKeepsPartOfItsScoreWithoutAConversation) {
  MemoryRecord question = Turn(1, "alice", "", "Do you like green tea?", 10);
  MemoryRecord statement = Turn(2, "alice", "", "Bob grows green tea in Japan.", 20);
  shard_.Upsert(question);
  shard_.Upsert(statement);
  const MemoryFilter f = UserFilter("alice");
  MemoryQuery query{
      .terms = analyzer_.AnalyzeQuery("green tea"), .filter = &f, .k = 2, .now_us = 1};
  auto score_of = [&](bool steps, const std::string& id) {
    query.conversation_steps = steps;
    auto hits = shard_.Search(query);
    EXPECT_TRUE(hits.ok());
    for (const auto& h : *hits) {
      if (h.memory.id == id) return h.score;
    }
    return -1.0f;
  };
  const float plain = score_of(false, "m-1");
  ASSERT_GT(plain, 0.0f);
  EXPECT_NEAR(score_of(true, "m-1"), plain * RetrievalOptions{}.question_factor, 1e-5);
  EXPECT_FLOAT_EQ(score_of(true, "m-2"), score_of(false, "m-2")) << "a statement keeps its score";
}

// BM25 scores with the searched scope's statistics: alice's results are the same, score for score,
// whether or not bob's memories (full of the query's words) share the workspace, through writes,
// updates and removals, with and without metadata narrowing.
TEST(MemoryScopeStatisticsTest, AnotherUsersMemoriesDoNotChangeAUsersScores) {
  Analyzer analyzer;
  MemoryShard shared(&analyzer, MemoryShardOptions{.vectors = {.dim = 2}});
  MemoryShard alone(&analyzer, MemoryShardOptions{.vectors = {.dim = 2}});
  auto both = [&](const MemoryRecord& r) {
    shared.Upsert(r);
    alone.Upsert(r);
  };
  both(Rec(1, "alice", "alice drinks green tea every morning", R"({"topic":"food"})"));
  both(Rec(2, "alice", "alice cycles to work", R"({"topic":"sport"})"));
  both(Rec(3, "alice", "tea and cake with her sister", R"({"topic":"food"})"));
  both(Rec(4, "alice", "a long walk in the park", R"({"topic":"sport"})"));
  // Enough candidates, matching the two query words in different mixes, that fused scores
  // depend on the words' weights (two candidates would always standardise to the same pair).
  both(Rec(5, "alice", "green apples from the market", R"({"topic":"food"})"));
  both(Rec(6, "alice", "green green tea for the guests", R"({"topic":"food"})"));
  both(Rec(7, "alice", "tea tea and more tea", R"({"topic":"food"})"));
  both(Rec(8, "alice", "a green bicycle", R"({"topic":"sport"})"));
  for (int i = 0; i < 40; ++i) shared.Upsert(Rec(100 + i, "bob", "tea tea green tea shop"));

  auto expect_same = [&](const MemoryShard& reference, const std::string& q,
                         const std::string& filter_json) {
    auto filter = MemoryFilter::Parse(nlohmann::json::parse(filter_json), "filters", {});
    ASSERT_TRUE(filter.ok());
    MemoryQuery query{.terms = analyzer.AnalyzeQuery(q), .filter = &*filter, .k = 10, .now_us = 1};
    auto a = shared.Search(query);
    auto b = reference.Search(query);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), b->size()) << q << " " << filter_json;
    ASSERT_FALSE(a->empty());
    for (size_t i = 0; i < a->size(); ++i) {
      EXPECT_EQ((*a)[i].memory.id, (*b)[i].memory.id);
      EXPECT_FLOAT_EQ((*a)[i].score, (*b)[i].score) << q << " " << filter_json << " rank " << i;
    }
  };
  const std::string user = R"({"user_id": "alice"})";
  const std::string topic = R"({"AND": [{"user_id": "alice"}, {"metadata.topic": "food"}]})";
  const std::string two_keys = R"({"OR": [{"user_id": "alice"}, {"agent_id": "nobody"}]})";
  for (const auto& f : {user, topic, two_keys}) expect_same(alone, "green tea", f);
  // After an update and removals, against a shard that only ever held alice's final memories
  // (so the totals kept through the changes are checked, not just applied alike).
  shared.Upsert(
      Rec(3, "alice", "tea, cake and green apples with her sister", R"({"topic":"food"})"));
  shared.Remove("m-2");
  for (int i = 0; i < 20; ++i) shared.Remove("m-" + std::to_string(100 + i));
  MemoryShard fresh(&analyzer, MemoryShardOptions{.vectors = {.dim = 2}});
  for (const MemoryRecord& r :
       {Rec(1, "alice", "alice drinks green tea every morning", R"({"topic":"food"})"),
        Rec(3, "alice", "tea, cake and green apples with her sister", R"({"topic":"food"})"),
        Rec(4, "alice", "a long walk in the park", R"({"topic":"sport"})"),
        Rec(5, "alice", "green apples from the market", R"({"topic":"food"})"),
        Rec(6, "alice", "green green tea for the guests", R"({"topic":"food"})"),
        Rec(7, "alice", "tea tea and more tea", R"({"topic":"food"})"),
        Rec(8, "alice", "a green bicycle", R"({"topic":"sport"})")}) {
    fresh.Upsert(r);
  }
  for (const auto& f : {user, topic, two_keys}) expect_same(fresh, "green tea", f);
}

}  // namespace
}  // namespace engram
