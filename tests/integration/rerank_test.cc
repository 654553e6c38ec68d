// Optional LLM reranking of Leaderboard and V4 memory search results (--rerank llm), against the
// fake chat-completions endpoint (tests/support/fake_llm.py reverses the offered order). A server
// without reranking, given the same memories, gives the order the reranked one starts from.
#include <chrono>
#include <thread>

#include "python_fake.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

// Same memories on both servers: BM25 only, so both rank them identically.
void Fill(const HttpClient& client, const std::string& user, const std::string& word) {
  json messages = json::array();
  for (int i = 0; i < 6; ++i) {
    std::string text = "Note " + std::to_string(i) + " about " + word;
    for (int r = 0; r < 5 - i; ++r) text += " " + word;  // fewer mentions, lower rank
    messages.push_back(Message(text + ".", 1700000000000 + i * 3600000LL));
  }
  json body = AddBody(UniqueId("eval:run:rerank"), user, "s", messages);
  ASSERT_TRUE(IsAddSuccess(client.Post(kAddPath, body), body));
}

class RerankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ENGRAM_REQUIRE_BINARY();
    llm_ = std::make_unique<PythonFake>("fake_llm.py");
    if (llm_->port() == 0) GTEST_SKIP() << "python3 or tests/support/fake_llm.py not available";
    const std::vector<std::string> common = {
        "--embedder",   "none", "--retrieval",           "bm25",
        "--neighbours", "0",    "--leaderboard-results", "turns"};
    plain_ = std::make_unique<ServerProcess>(ServerOptions{.extra_args = common});
    std::vector<std::string> rerank = common;
    for (const char* a : {"--rerank", "llm", "--llm-model", "fake", "--rerank-candidates", "3",
                          "--rerank-timeout-ms", "1000"}) {
      rerank.push_back(a);
    }
    rerank.push_back("--llm-url");
    rerank.push_back(llm_->Url("/v1"));
    reranked_ = std::make_unique<ServerProcess>(ServerOptions{.extra_args = rerank});
    ASSERT_TRUE(plain_->Start());
    ASSERT_TRUE(reranked_->Start());
  }

  std::unique_ptr<PythonFake> llm_;
  std::unique_ptr<ServerProcess> plain_, reranked_;
};

TEST_F(RerankTest, TheEndpointOrdersTheBestCandidates) {
  HttpClient plain(plain_->BaseUrl()), reranked(reranked_->BaseUrl());
  const std::string user = UniqueId("user"), word = UniqueWord();
  Fill(plain, user, word);
  Fill(reranked, user, word);
  const json before = SearchData(plain, user, word, 10);
  const json after = SearchData(reranked, user, word, 10);
  ASSERT_EQ(before.size(), 6u) << before.dump();
  ASSERT_EQ(after.size(), 6u) << after.dump();
  // Contents match (ids differ between the two servers): the best three come reversed, the
  // rest keep their places, and scores still decrease with rank.
  for (size_t i = 0; i < 6; ++i) {
    const size_t from = i < 3 ? 2 - i : i;
    EXPECT_EQ(ContentText(after[i]["content"]), ContentText(before[from]["content"])) << i;
    if (i > 0) {
      EXPECT_LE(after[i]["score"].get<double>(), after[i - 1]["score"].get<double>());
    }
  }
}

TEST_F(RerankTest, AFailingOrSlowEndpointLeavesTheSearchInItsOwnOrder) {
  HttpClient plain(plain_->BaseUrl()), reranked(reranked_->BaseUrl());
  const std::string user = UniqueId("user"), word = UniqueWord();
  Fill(plain, user, word);
  Fill(reranked, user, word);
  for (const char* marker : {"FAKE_LLM_HTTP500", "FAKE_LLM_MALFORMED", "FAKE_LLM_SLOW"}) {
    SCOPED_TRACE(marker);
    const std::string query = word + " " + marker;
    const json before = SearchData(plain, user, query, 10);
    HttpResponse resp = reranked.Post(kSearchPath, SearchBody(user, query, 10));
    ASSERT_EQ(resp.status, 200) << resp.Describe();
    // FAKE_LLM_SLOW answers after 5 s; the rerank budget is 1 s.
    EXPECT_LT(resp.seconds, 4.0);
    std::vector<std::string> a, b;
    for (const auto& item : before) a.push_back(ContentText(item["content"]));
    const json got = resp.Json();  // kept: a range-for over a temporary's member would dangle
    for (const auto& item : got["data"]) b.push_back(ContentText(item["content"]));
    EXPECT_EQ(a, b);
  }
  HttpResponse metrics = reranked.Get("/metrics");
  EXPECT_NE(metrics.body.find("engram_rerank_failures_total{api=\"leaderboard\"} 3"),
            std::string::npos);
}

TEST_F(RerankTest, MemorySearchIsRerankedToo) {
  HttpClient plain(plain_->BaseUrl()), reranked(reranked_->BaseUrl());
  const std::string p4 = "/v4/openapi/workspaces/default/memory/agentic-memory/memories/";
  const std::string user = UniqueId("user"), word = UniqueWord();
  for (HttpClient* c : {&plain, &reranked}) {
    for (int i = 0; i < 5; ++i) {
      std::string text = "Memory " + std::to_string(i) + " about " + word;
      for (int r = 0; r < 5 - i; ++r) text += " " + word;
      json add = {{"messages", text}, {"user_id", user}, {"infer", false}};
      HttpResponse r = c->Post(p4 + "add", add);
      ASSERT_EQ(r.status, 200) << r.Describe();
    }
  }
  auto texts = [&](HttpClient& c) {
    std::vector<std::string> out;
    for (int attempt = 0; attempt < 100; ++attempt) {  // events finish asynchronously
      const json got = c.Post(p4 + "search", json{{"query", word}, {"user_id", user}}).Json();
      out.clear();
      if (!got.is_object() || !got.contains("results")) continue;
      for (const auto& item : got["results"]) out.push_back(item.value("memory", ""));
      if (out.size() == 5) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return out;
  };
  const auto before = texts(plain), after = texts(reranked);
  ASSERT_EQ(before.size(), 5u);
  ASSERT_EQ(after.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(after[i], before[i < 3 ? 2 - i : i]) << i;
}

}  // namespace
}  // namespace engram::testing
