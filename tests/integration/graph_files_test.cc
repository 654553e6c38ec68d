// A scope's HNSW graph kept across a clean restart, against a real server: saved beside the store
// (graphs/) when the server stops, taken back by the next start's load of the scope instead of
// being built, answering as before, and removed with the user's data; a knowledge base's the same.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "common/codec.h"
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

TEST(GraphFilesTest, AScopeGraphIsKeptAcrossARestartAndGoesWithItsUser) {
  ENGRAM_REQUIRE_BINARY();
  // A graph from 60 vectors on, so a small scope has one; vector-only retrieval with no cosine
  // floor, so the answers come from it.
  ServerProcess server(
      {.extra_args = {"--api-key", "gk1", "--hnsw-threshold", "60", "--retrieval", "vector",
                      "--relevance-floor", "0", "--leaderboard-results", "turns"}});
  ASSERT_TRUE(server.Start());
  const std::string user = UniqueId("graph-user");
  {
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
    // The background vectors arrive; the scope's graph is built once it holds 60.
    ASSERT_TRUE(WaitForGraphs(server, 1)) << server.Output();
    EXPECT_EQ(GraphsAnswering(server)[0].second, 0) << "nothing saved yet to take from";
  }
  // Every vector stored before the stop (the queue drained), so the next load holds them all.
  {
    HttpClient client(server.BaseUrl());
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      const std::string metrics = client.Get("/metrics", kAuth).body;
      if (metrics.find("\nengram_vector_queue 0\n") != std::string::npos) break;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "vectors never caught up";
      std::this_thread::sleep_for(50ms);
    }
  }
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

}  // namespace
}  // namespace engram::testing
