// Several nodes on one PostgreSQL database: two real `engram serve` processes with the
// same --store-url. A write acknowledged by one node is found by the other at once; retries of
// one request_id spread over both nodes store once; when a node is killed mid-work the other keeps
// serving and finishes the jobs the dead node had claimed, once their lease runs out.
// Skips without a test cluster (ENGRAM_TEST_PG_URL; scripts/test.sh starts one).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "pg_test_db.h"
#include "python_fake.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kPrefix = "/v4/openapi/workspaces/default/memory/agentic-memory";

class MultiNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ENGRAM_REQUIRE_BINARY();
    db_ = PgTestDatabase::Create();
    if (!db_) GTEST_SKIP() << PgTestDatabase::kSkipMessage;
  }

  // A node on the test database; short leases so a dead node's jobs move within seconds.
  std::unique_ptr<ServerProcess> StartNode(const std::string& name,
                                           std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--store-url",         db_->url(), "--node-id",      name,
                                     "--store-connections", "6",        "--job-lease-ms", "1500",
                                     "--job-poll-ms",       "200"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto node = std::make_unique<ServerProcess>(ServerOptions{.extra_args = args});
    auto started = node->Start();
    EXPECT_TRUE(started);
    if (!started) return nullptr;
    return node;
  }

  static json WaitEvent(const HttpClient& client, const std::string& id,
                        std::chrono::milliseconds timeout = 30s) {
    json last;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      last = client.Get(kPrefix + "/events/" + id).Json();
      const std::string status = last.value("status", "");
      if (status == "SUCCEEDED" || status == "FAILED") break;
      std::this_thread::sleep_for(50ms);
    }
    return last;
  }

  std::unique_ptr<PgTestDatabase> db_;
};

TEST_F(MultiNodeTest, WriteAcknowledgedByOneNodeIsFoundByTheOther) {
  auto a = StartNode("node-a");
  auto b = StartNode("node-b");
  ASSERT_TRUE(a && b);
  HttpClient ca(a->BaseUrl());
  HttpClient cb(b->BaseUrl());

  // Leaderboard: both nodes load the scope first, so node B answers from a warm (stale) cache.
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  EXPECT_EQ(CountContaining(SearchData(cb, user, word), word), 0);
  json body = AddBody(UniqueId("r"), user, "s1", json::array({Message("the code is " + word)}));
  ASSERT_TRUE(IsAddSuccess(ca.Post(kAddPath, body), body));
  EXPECT_EQ(CountContaining(SearchData(cb, user, word), word), 1) << "node B missed node A's add";
  // And the other way round, on the same scope.
  const std::string word2 = UniqueWord();
  json body2 = AddBody(UniqueId("r"), user, "s1", json::array({Message("the key is " + word2)}));
  ASSERT_TRUE(IsAddSuccess(cb.Post(kAddPath, body2), body2));
  EXPECT_EQ(CountContaining(SearchData(ca, user, word2), word2), 1);

  // Agentic memories: added on A, found, updated and deleted across nodes.
  const std::string mem_user = UniqueId("mu");
  const std::string fact = "I keep my bicycle " + UniqueWord();
  HttpResponse added = ca.Post(kPrefix + "/memories/add",
                               json{{"messages", fact}, {"user_id", mem_user}, {"infer", false}});
  ASSERT_EQ(added.status, 200) << added.Describe();
  json done = WaitEvent(cb, added.Json().value("event_id", ""));  // the event, read on node B
  ASSERT_EQ(done.value("status", ""), "SUCCEEDED") << done.dump() << "\nnode A:\n"
                                                   << a->Output() << "\nnode B:\n"
                                                   << b->Output();
  json found =
      cb.Post(kPrefix + "/memories/search", json{{"query", fact}, {"user_id", mem_user}}).Json();
  ASSERT_EQ(found["results"].size(), 1u) << found.dump();
  const std::string id = found["results"][0].value("id", "");
  const std::string updated = "I keep my bicycle in the shed " + UniqueWord();
  HttpResponse put = cb.Request("PUT", kPrefix + "/memories/" + id, json{{"text", updated}}.dump(),
                                {{"Content-Type", "application/json"}});
  ASSERT_EQ(put.status, 200) << put.Describe();
  EXPECT_EQ(ca.Get(kPrefix + "/memories/" + id).Json().value("memory", ""), updated);
  ASSERT_EQ(ca.Delete(kPrefix + "/memories/" + id).status, 200);
  json gone =
      cb.Post(kPrefix + "/memories/search", json{{"query", updated}, {"user_id", mem_user}}).Json();
  EXPECT_EQ(gone["results"].size(), 0u) << gone.dump();
  EXPECT_EQ(cb.Get(kPrefix + "/memories/" + id).status, 404);
}

TEST_F(MultiNodeTest, RetriesOfOneRequestIdOnBothNodesStoreOnce) {
  auto a = StartNode("node-a");
  auto b = StartNode("node-b");
  ASSERT_TRUE(a && b);
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  json body = AddBody(UniqueId("r"), user, "s1",
                      json::array({Message("first " + word), Message("second " + word)}));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      HttpClient c(i % 2 == 0 ? a->BaseUrl() : b->BaseUrl());
      if (IsAddSuccess(c.Post(kAddPath, body), body)) ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8) << "every retry gets the first attempt's answer";
  HttpClient ca(a->BaseUrl());
  HttpClient cb(b->BaseUrl());
  // Each message shown once, whether as a result or inside another's excerpt.
  EXPECT_EQ(CountOccurrences(SearchData(ca, user, word), word), 2);
  EXPECT_EQ(CountOccurrences(SearchData(cb, user, word), word), 2);
  // The same request_id with another body is a conflict on either node.
  json other = body;
  other["messages"] = json::array({Message("something else")});
  EXPECT_TRUE(IsError(cb.Post(kAddPath, other), 409, "Conflict"));
}

// Node A accepts memory adds whose extraction is slow (the fake LLM sleeps 5 s) and is killed
// mid-extraction; node B keeps answering and, once A's leases ran out, runs A's events to the end.
TEST_F(MultiNodeTest, KilledNodesJobsFinishOnTheOtherNode) {
  PythonFake llm("fake_llm.py");
  if (llm.port() == 0) GTEST_SKIP() << "python3 or tests/support/fake_llm.py not available";
  const std::vector<std::string> llm_args = {
      "--extractor",   "llm", "--llm-url",        llm.Url("/v1"), "--llm-model",     "fake",
      "--llm-retries", "0",   "--llm-timeout-ms", "20000",        "--event-workers", "2"};
  auto a = StartNode("node-a", llm_args);
  auto b = StartNode("node-b", llm_args);
  ASSERT_TRUE(a && b);
  HttpClient ca(a->BaseUrl());
  HttpClient cb(b->BaseUrl());
  std::vector<std::string> events;
  std::vector<std::string> users;
  for (int i = 0; i < 3; ++i) {
    users.push_back(UniqueId("u"));
    HttpResponse r =
        ca.Post(kPrefix + "/memories/add",
                json{{"messages", "FAKE_LLM_SLOW I collect stamps."}, {"user_id", users.back()}});
    ASSERT_EQ(r.status, 200) << r.Describe();
    events.push_back(r.Json().value("event_id", ""));
  }
  std::this_thread::sleep_for(300ms);
  a->Kill();
  // B serves meanwhile.
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  json body = AddBody(UniqueId("r"), user, "s1", json::array({Message("still here " + word)}));
  EXPECT_TRUE(IsAddSuccess(cb.Post(kAddPath, body), body));
  EXPECT_EQ(CountContaining(SearchData(cb, user, word), word), 1);
  for (size_t i = 0; i < events.size(); ++i) {
    json done = WaitEvent(cb, events[i], 40s);
    EXPECT_EQ(done.value("status", ""), "SUCCEEDED") << done.dump();
    EXPECT_EQ(cb.Get(kPrefix + "/memories?user_id=" + users[i]).Json()["total"], 1);
  }
  EXPECT_NE(b->Output().find("took over"), std::string::npos);
}

}  // namespace
}  // namespace engram::testing
