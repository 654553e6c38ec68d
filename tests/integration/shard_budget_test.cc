// One --shard-memory-mb budget over every domain's in-memory shards, against a real server: with
// a budget far smaller than the data, Leaderboard users, V4 memory workspaces, knowledge bases and
// skill workspaces are all dropped from memory and loaded again on use, every search still finds
// what was written, and /metrics counts the evictions per domain.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/codec.h"
#include "test_util.h"
#include "zip_writer.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int kShards = 3;  // per domain

std::string V4(const std::string& workspace) {
  return "/v4/openapi/workspaces/" + workspace + "/memory/agentic-memory";
}
std::string V3(const std::string& workspace) {
  return "/v3/openapi/workspaces/" + workspace + "/memory/agentic-memory";
}

// `n` distinct made-up words: each is a BM25 term of its own, so a shard holding them is large.
std::string Words(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (!out.empty()) out += ' ';
    out += UniqueWord();
  }
  return out;
}

const fs::path& ImportDir() {
  static const fs::path dir = [] {
    char templ[] = "/tmp/engram-budget-test-XXXXXX";
    if (mkdtemp(templ) == nullptr) std::abort();
    return fs::path(templ);
  }();
  return dir;
}

class ShardBudgetApiTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    // Any two of the shards below are larger than the budget together: each load drops every
    // idle one.
    o.extra_args = {"--shard-memory-mb", "1",    "--embedder",   "none",
                    "--retrieval",       "bm25", "--import-dir", ImportDir().string()};
    return o;
  }
  static void TearDownTestSuite() {
    SharedServerTest::TearDownTestSuite();
    std::error_code ec;
    fs::remove_all(ImportDir(), ec);
  }

  json Poll(const std::string& path, const std::string& field, const std::string& pending1,
            const std::string& pending2 = "") {
    json last;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      HttpResponse r = client().Get(path);
      EXPECT_EQ(r.status, 200) << r.Describe();
      if (r.status != 200) return json();
      last = r.Json();
      if (last.contains("result")) last = last["result"];
      const std::string s = last.value(field, "");
      if (s != pending1 && s != pending2) return last;
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << path << " still pending: " << last.dump();
    return last;
  }

  // Per domain label, the value of a labelled /metrics sample (-1 when absent).
  double Sample(const std::string& metrics, const std::string& name, const std::string& domain) {
    const std::string prefix = name + "{domain=\"" + domain + "\"} ";
    const size_t at = metrics.find("\n" + prefix);
    if (at == std::string::npos) return -1;
    return std::atof(metrics.c_str() + at + 1 + prefix.size());
  }
};

TEST_F(ShardBudgetApiTest, EveryDomainIsDroppedUnderATinyBudgetAndFoundAgain) {
  const std::string run = UniqueWord();
  std::vector<std::string> users, memory_spaces, kbs, skill_spaces, markers;
  for (int i = 0; i < kShards; ++i) {
    users.push_back(UniqueId("u"));
    memory_spaces.push_back("bm" + run + std::to_string(i));
    kbs.push_back("kb-" + run + "-" + std::to_string(i));
    skill_spaces.push_back("bs" + run + std::to_string(i));
    markers.push_back(UniqueWord());
  }

  for (int i = 0; i < kShards; ++i) {
    // Leaderboard: one user each.
    json messages = json::array();
    for (int m = 0; m < 4; ++m) messages.push_back(Message(markers[i] + " " + Words(1500)));
    json add = AddBody(UniqueId("eval:run:b"), users[i], "s", messages);
    ASSERT_TRUE(IsAddSuccess(client().Post(kAddPath, add), add));

    // V4 memories: one workspace each, verbatim.
    json v4 = json::array();
    for (int m = 0; m < 4; ++m) {
      v4.push_back({{"role", "user"}, {"content", markers[i] + " " + Words(1500)}});
    }
    HttpResponse r = client().Post(V4(memory_spaces[i]) + "/memories/add",
                                   {{"messages", v4}, {"user_id", "alice"}, {"infer", false}});
    ASSERT_EQ(r.status, 200) << r.Describe();
    json event = Poll(V4(memory_spaces[i]) + "/events/" + r.Json().value("event_id", ""), "status",
                      "PENDING", "RUNNING");
    ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();

    // Knowledge bases: one document each.
    const std::string file = "doc" + std::to_string(i) + ".txt";
    std::ofstream(ImportDir() / file) << markers[i] << " lighthouse\n" << Words(8000) << "\n";
    r = client().Post(
        "/v3/openapi/workspaces/default/memory/agentic-memory/knowledge-bases/" + kbs[i] + "/docs",
        {{"type", "LOCAL"}, {"doc", {{"title", "Logbook"}, {"file_url", file}}}});
    ASSERT_EQ(r.status, 200) << r.Describe();
    json doc = Poll("/v3/openapi/workspaces/default/memory/agentic-memory/knowledge-bases/" +
                        kbs[i] + "/docs/" + r.Json()["result"].value("id", ""),
                    "status", "PROCESSING");
    ASSERT_EQ(doc.value("status", ""), "SUCCESS") << doc.dump();

    // Skills: one workspace each.
    const std::string md = "---\nname: voyage-" + markers[i] + "\ndescription: Plan the " +
                           markers[i] + " voyage\n---\n# Steps\n" + Words(8000) + "\n";
    r = client().Post(
        V3(skill_spaces[i]) + "/skills/import",
        {{"zip_base64", Base64Encode(MakeZip({{"SKILL.md", md}}))}, {"user_id", "alice"}});
    ASSERT_EQ(r.status, 200) << r.Describe();
  }

  // Twice over: each search loads its shard again (the loads in between dropped it).
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kShards; ++i) {
      SCOPED_TRACE("round " + std::to_string(round) + ", shard " + std::to_string(i));
      EXPECT_EQ(CountContaining(SearchData(client(), users[i], markers[i]), markers[i]), 4);

      HttpResponse r = client().Post(V4(memory_spaces[i]) + "/memories/search",
                                     {{"query", markers[i]}, {"user_id", "alice"}});
      ASSERT_EQ(r.status, 200) << r.Describe();
      EXPECT_EQ(r.Json()["results"].size(), 4u) << r.body.substr(0, 300);

      r = client().Post("/v3/openapi/workspaces/default/memory/agentic-memory/knowledge-bases/" +
                            kbs[i] + "/search",
                        {{"query", markers[i] + " lighthouse"}, {"top_k", 3}});
      ASSERT_EQ(r.status, 200) << r.Describe();
      json hits = r.Json()["result"]["results"];
      ASSERT_FALSE(hits.empty());
      EXPECT_NE(hits[0].value("chunk", "").find(markers[i]), std::string::npos);

      r = client().Post(V3(skill_spaces[i]) + "/skills/search",
                        {{"query", markers[i] + " voyage"}, {"user_id", "alice"}});
      ASSERT_EQ(r.status, 200) << r.Describe();
      json skills = r.Json()["result"]["results"];
      ASSERT_EQ(skills.size(), 1u) << r.body.substr(0, 300);
      EXPECT_EQ(skills[0].value("name", ""), "voyage-" + markers[i]);
    }
  }

  // A dropped Leaderboard, memories or kb shard stays counted until its graph's save has run on the
  // saver thread: the metrics are read once every domain holds at most one shard, or after 10 s.
  HttpResponse metrics;
  for (int t = 0; t < 100; ++t) {
    metrics = client().Get("/metrics");
    ASSERT_EQ(metrics.status, 200) << metrics.Describe();
    bool settled = true;
    for (const char* domain : {"leaderboard", "memories", "kb", "skills"}) {
      settled = settled && Sample(metrics.body, "engram_shards_loaded", domain) <= 1;
    }
    if (settled) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string& m = metrics.body;
  EXPECT_NE(m.find("\nengram_shard_budget_bytes 1048576\n"), std::string::npos);
  for (const char* domain : {"leaderboard", "memories", "kb", "skills"}) {
    SCOPED_TRACE(domain);
    EXPECT_GE(Sample(m, "engram_shard_evictions_total", domain), kShards);
    EXPECT_GE(Sample(m, "engram_shards_loaded", domain), 0);
    EXPECT_LE(Sample(m, "engram_shards_loaded", domain), 1) << "idle shards stayed resident";
    EXPECT_GE(Sample(m, "engram_shard_bytes", domain), 0);
    // Present for every domain; none of these scopes is large enough to keep a graph.
    EXPECT_EQ(Sample(m, "engram_graph_save_failures_total", domain), 0);
  }
}

}  // namespace
}  // namespace engram::testing
