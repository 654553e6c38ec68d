// A scope's HNSW graph kept across a clean restart, against a real server: saved beside the store
// (graphs/) when the server stops, taken back by the next start's load of the scope instead of
// being built, answering as before, and removed with the user's data, also when another node of a
// shared store deleted the user; a knowledge base's and a V4 memory workspace's kept the same.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "common/codec.h"
#include "core/shard_graphs.h"
#include "core/shard_keys.h"
#include "memory_client.h"
#include "pg_test_db.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

const Headers kAuth = {{"Authorization", "Bearer gk1"}};

// The graph files (not their records) in the server's graph directory.
std::vector<fs::path> GraphFiles(const std::string& data_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(data_dir) / "graphs", ec)) {
    if (entry.path().extension() == ".hnsw") out.push_back(entry.path());
  }
  return out;
}

// Every "vector graph of a <domain> shard answers: N vectors, M taken" line so far: (N, M).
std::vector<std::pair<int, int>> GraphsAnswering(const ServerProcess& server,
                                                 const std::string& domain = "leaderboard") {
  const std::regex line("vector graph of a " + domain +
                        R"( shard answers: (\d+) vectors, (\d+) taken)");
  std::vector<std::pair<int, int>> out;
  const std::string output = server.Output();
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
    out.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  }
  return out;
}

// Waits up to 60 s until `count` graphs of `domain` have been reported.
bool WaitForGraphs(const ServerProcess& server, size_t count,
                   const std::string& domain = "leaderboard") {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (GraphsAnswering(server, domain).size() >= count) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// The ids of a vector-only search's results.
std::vector<std::string> Ids(const HttpClient& client, const std::string& user,
                             const std::string& query) {
  HttpResponse r = client.Post("/leaderboard/search", SearchBody(user, query, 5), kAuth);
  EXPECT_EQ(r.status, 200) << r.Describe();
  std::vector<std::string> ids;
  if (r.status != 200) return ids;
  const json body = r.Json();
  for (const auto& hit : body["data"]) ids.push_back(hit.value("id", ""));
  return ids;
}

// Adds 80 short notes to `user`, in four adds.
void AddNotes(const ServerProcess& server, const std::string& user) {
  HttpClient client(server.BaseUrl());
  static const char* kTopics[] = {"espresso",      "train timetable", "violin lessons",
                                  "tax return",    "garden tomatoes", "marathon training",
                                  "kitchen tiles", "chess openings"};
  for (int add = 0; add < 4; ++add) {
    json messages = json::array();
    for (int i = 0; i < 20; ++i) {
      const int n = add * 20 + i;
      messages.push_back(Message(
          "Note " + std::to_string(n) + " about " + kTopics[n % 8] + ": entry " + UniqueWord(),
          1704067200000 + n * 60000));
    }
    HttpResponse r = client.Post("/leaderboard/add",
                                 AddBody(UniqueId("graph-add"), user, "s1", messages), kAuth);
    ASSERT_EQ(r.status, 200) << r.Describe();
  }
}

// Waits up to 60 s until the server's background vector queue is empty.
void WaitForVectors(const ServerProcess& server) {
  HttpClient client(server.BaseUrl());
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    const std::string metrics = client.Get("/metrics", kAuth).body;
    if (metrics.find("\nengram_vector_queue 0\n") != std::string::npos) return;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "vectors never caught up";
    std::this_thread::sleep_for(50ms);
  }
}

TEST(GraphFilesTest, AScopeGraphIsKeptAcrossARestartAndGoesWithItsUser) {
  ENGRAM_REQUIRE_BINARY();
  // A graph from 60 vectors on, so a small scope has one; vector-only retrieval with no cosine
  // floor, so the answers come from it.
  ServerProcess server(
      {.extra_args = {"--api-key", "gk1", "--hnsw-threshold", "60", "--retrieval", "vector",
                      "--relevance-floor", "0", "--leaderboard-results", "turns"}});
  ASSERT_TRUE(server.Start());
  const std::string user = UniqueId("graph-user");
  ASSERT_NO_FATAL_FAILURE(AddNotes(server, user));
  // The background vectors arrive; the scope's graph is built once it holds 60.
  ASSERT_TRUE(WaitForGraphs(server, 1)) << server.Output();
  EXPECT_EQ(GraphsAnswering(server)[0].second, 0) << "nothing saved yet to take from";
  // Every vector stored before the stop, so the next load holds them all.
  ASSERT_NO_FATAL_FAILURE(WaitForVectors(server));
  std::vector<std::string> before;
  {
    HttpClient client(server.BaseUrl());
    before = Ids(client, user, "what do I drink in the morning");
    ASSERT_EQ(before.size(), 5u);
  }
  ASSERT_TRUE(server.Stop().exited);
  EXPECT_NE(server.Output().find("vector graphs of 1 loaded leaderboard shards saved or unchanged"),
            std::string::npos)
      << server.Output();
  ASSERT_EQ(GraphFiles(server.data_dir()).size(), 1u);
  EXPECT_TRUE(fs::exists(GraphFiles(server.data_dir())[0].string() + ".meta"));

  // The next start's load takes every vector's element from the file and answers as before.
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  (void)Ids(client, user, "what do I drink in the morning");  // loads the scope
  ASSERT_TRUE(WaitForGraphs(server, 2)) << server.Output();
  const auto [vectors, taken] = GraphsAnswering(server)[1];
  EXPECT_EQ(vectors, 80);
  EXPECT_EQ(taken, 80) << "the graph was built again instead of taken from its file";
  EXPECT_EQ(Ids(client, user, "what do I drink in the morning"), before);

  // The user's data deleted: the file goes at once, and the stop saves nothing for the user.
  HttpResponse del = client.Delete("/leaderboard/users/" + user, kAuth);
  ASSERT_EQ(del.status, 200) << del.Describe();
  EXPECT_TRUE(GraphFiles(server.data_dir()).empty());
  ASSERT_TRUE(server.Stop().exited);
  EXPECT_TRUE(GraphFiles(server.data_dir()).empty());
}

std::string KbPath(const std::string& kb_id) {
  return "/v3/openapi/workspaces/default/memory/agentic-memory/knowledge-bases/" + kb_id;
}

// A knowledge-base search's results, each as its JSON text.
std::vector<std::string> KbHits(const HttpClient& client, const std::string& kb,
                                const std::string& query) {
  HttpResponse r = client.Post(KbPath(kb) + "/search", json{{"query", query}, {"top_k", 5}}, kAuth);
  EXPECT_EQ(r.status, 200) << r.Describe();
  std::vector<std::string> out;
  if (r.status != 200) return out;
  const json body = r.Json();
  for (const auto& hit : body["result"]["results"]) out.push_back(hit.dump());
  return out;
}

TEST(GraphFilesTest, AKnowledgeBaseGraphIsKeptAcrossARestart) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server(
      {.extra_args = {"--api-key", "gk1", "--hnsw-threshold", "60", "--relevance-floor", "0"}});
  ASSERT_TRUE(server.Start());
  const std::string kb = UniqueId("graph-kb");
  // A heading starts a chunk: 80 sections, 80 chunks, one graph once they are in.
  static const char* kTopics[] = {"espresso",      "train timetable", "violin lessons",
                                  "tax return",    "garden tomatoes", "marathon training",
                                  "kitchen tiles", "chess openings"};
  std::string markdown;
  for (int n = 0; n < 80; ++n) {
    markdown += "# Section " + std::to_string(n) + "\n\nNote " + std::to_string(n) + " about " +
                kTopics[n % 8] + ": entry " + UniqueWord() + ".\n\n";
  }
  {
    HttpClient client(server.BaseUrl());
    HttpResponse r = client.Post(KbPath(kb) + "/docs",
                                 json{{"type", "CONTENT"},
                                      {"doc",
                                       {{"id", "notes"},
                                        {"title", "Notes"},
                                        {"file_name", "notes.md"},
                                        {"content_base64", Base64Encode(markdown)}}}},
                                 kAuth);
    ASSERT_EQ(r.status, 200) << r.Describe();
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      HttpResponse doc = client.Get(KbPath(kb) + "/docs/notes", kAuth);
      ASSERT_EQ(doc.status, 200) << doc.Describe();
      const std::string status = doc.Json()["result"].value("status", "");
      if (status == "SUCCESS") break;
      ASSERT_EQ(status, "PROCESSING") << doc.body;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "document never ingested";
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(WaitForGraphs(server, 1, "kb")) << server.Output();
    EXPECT_EQ(GraphsAnswering(server, "kb")[0].first, 80);
  }
  std::vector<std::string> before;
  {
    HttpClient client(server.BaseUrl());
    before = KbHits(client, kb, "what do I drink in the morning");
    ASSERT_EQ(before.size(), 5u);
  }
  ASSERT_TRUE(server.Stop().exited);
  EXPECT_NE(server.Output().find("vector graphs of 1 loaded kb shards saved or unchanged"),
            std::string::npos)
      << server.Output();
  ASSERT_EQ(GraphFiles(server.data_dir()).size(), 1u);

  // The next start's load takes every chunk's element from the file and answers as before.
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  (void)KbHits(client, kb, "what do I drink in the morning");  // loads the knowledge base
  ASSERT_TRUE(WaitForGraphs(server, 2, "kb")) << server.Output();
  const auto [vectors, taken] = GraphsAnswering(server, "kb")[1];
  EXPECT_EQ(vectors, 80);
  EXPECT_EQ(taken, 80) << "the graph was built again instead of taken from its file";
  EXPECT_EQ(KbHits(client, kb, "what do I drink in the morning"), before);
}

// A V4 memory workspace's graph: the start's sweep keeps it (the store holds the workspace's
// memories) and the next load takes it back.
TEST(GraphFilesTest, AMemoryWorkspaceGraphIsKeptAcrossARestart) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server({.extra_args = {"--hnsw-threshold", "60", "--relevance-floor", "0"}});
  ASSERT_TRUE(server.Start());
  const std::string user = UniqueId("graph-memories");
  const json query = {{"query", "what do I drink in the morning"}, {"user_id", user}};
  {
    HttpClient client(server.BaseUrl());
    static const char* kTopics[] = {"espresso", "violin lessons", "tax return", "chess openings"};
    for (int add = 0; add < 4; ++add) {
      json messages = json::array();
      for (int i = 0; i < 20; ++i) {
        const int n = add * 20 + i;
        messages.push_back({{"role", "user"},
                            {"content", "Note " + std::to_string(n) + " about " + kTopics[n % 4] +
                                            ": entry " + UniqueWord()}});
      }
      json event =
          AddMemoriesAndWait(client, {{"messages", messages}, {"user_id", user}, {"infer", false}});
      ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
    }
    EXPECT_FALSE(SearchMemories(client, query).empty());
    ASSERT_TRUE(WaitForGraphs(server, 1, "memories")) << server.Output();
  }
  ASSERT_TRUE(server.Stop().exited);
  ASSERT_EQ(GraphFiles(server.data_dir()).size(), 1u) << server.Output();

  ASSERT_TRUE(server.Start());
  EXPECT_NE(server.Output().find(
                "saved vector graphs swept: 1 kept, 0 of scopes no longer stored removed"),
            std::string::npos)
      << server.Output();
  ASSERT_EQ(GraphFiles(server.data_dir()).size(), 1u);
  HttpClient client(server.BaseUrl());
  EXPECT_FALSE(SearchMemories(client, query).empty());  // loads the workspace
  ASSERT_TRUE(WaitForGraphs(server, 2, "memories")) << server.Output();
  const auto [vectors, taken] = GraphsAnswering(server, "memories")[1];
  EXPECT_EQ(vectors, 80);
  EXPECT_EQ(taken, 80) << "the graph was built again instead of taken from its file";
}

// On a shared store a user can be deleted through another node. The graph this node saved for the
// user holds the user's vector codes; the node's next start removes it, and keeps the graphs of
// the users the store still holds.
TEST(GraphFilesTest, AUserDeletedThroughAnotherNodeLeavesNoGraphOnThisOne) {
  ENGRAM_REQUIRE_BINARY();
  std::unique_ptr<PgTestDatabase> db = PgTestDatabase::Create();
  if (!db) GTEST_SKIP() << PgTestDatabase::kSkipMessage;
  const std::vector<std::string> shared = {"--api-key",         "gk1", "--store-url", db->url(),
                                           "--hnsw-threshold",  "60",  "--retrieval", "vector",
                                           "--relevance-floor", "0"};
  std::vector<std::string> args_a = shared, args_b = shared;
  args_a.insert(args_a.end(), {"--node-id", "node-a"});
  args_b.insert(args_b.end(), {"--node-id", "node-b"});
  ServerProcess a({.extra_args = args_a});
  ServerProcess b({.extra_args = args_b});
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  const std::string kept = UniqueId("graph-kept");
  const std::string deleted = UniqueId("graph-deleted");
  ASSERT_NO_FATAL_FAILURE(AddNotes(a, kept));
  ASSERT_NO_FATAL_FAILURE(AddNotes(a, deleted));
  ASSERT_NO_FATAL_FAILURE(WaitForVectors(a));
  {
    HttpClient client(a.BaseUrl());
    // Both scopes loaded on node A, each with its graph.
    EXPECT_EQ(Ids(client, kept, "what do I drink in the morning").size(), 5u);
    EXPECT_EQ(Ids(client, deleted, "what do I drink in the morning").size(), 5u);
    ASSERT_TRUE(WaitForGraphs(a, 2)) << a.Output();
  }
  ASSERT_TRUE(a.Stop().exited);
  ASSERT_EQ(GraphFiles(a.data_dir()).size(), 2u) << a.Output();

  // Node B deletes a user while node A is down: node A's file is out of its reach.
  HttpClient cb(b.BaseUrl());
  HttpResponse del = cb.Delete("/leaderboard/users/" + deleted, kAuth);
  ASSERT_EQ(del.status, 200) << del.Describe();
  EXPECT_EQ(GraphFiles(a.data_dir()).size(), 2u);

  ASSERT_TRUE(a.Start());
  EXPECT_NE(a.Output().find("saved vector graphs swept: 1 kept, 1 of scopes no longer stored"),
            std::string::npos)
      << a.Output();
  const std::vector<fs::path> left = GraphFiles(a.data_dir());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].string(),
            ShardGraphPath((fs::path(a.data_dir()) / "graphs").string(), ShardDomain::kLeaderboard,
                           LeaderboardShardKey("leaderboard", kept)));
  for (const auto& entry : fs::directory_iterator(fs::path(a.data_dir()) / "graphs")) {
    EXPECT_EQ(entry.path().string().rfind(left[0].string(), 0), 0u)
        << "a file of the deleted user's graph is left: " << entry.path();
  }
  // The kept user's graph still serves its next load.
  HttpClient ca(a.BaseUrl());
  EXPECT_EQ(Ids(ca, kept, "what do I drink in the morning").size(), 5u);
  ASSERT_TRUE(WaitForGraphs(a, 3)) << a.Output();
  EXPECT_EQ(GraphsAnswering(a)[2].second, 80) << "the kept user's graph was built again";
}

}  // namespace
}  // namespace engram::testing
