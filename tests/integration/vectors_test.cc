// Vectors end to end: semantic recall through the built-in model, and re-embedding in the
// background when memories were stored without vectors (another model, or none).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

constexpr const char* kAddPath = "/leaderboard/add";
constexpr const char* kSearchPath = "/leaderboard/search";

bool Found(const HttpClient& client, const std::string& user, const std::string& query,
           const std::string& needle) {
  HttpResponse resp = client.Post(kSearchPath, SearchBody(user, query, 5));
  if (resp.status != 200) return false;
  json body = json::parse(resp.body, nullptr, false);
  return body.is_object() && body.contains("data") && CountContaining(body["data"], needle) > 0;
}

TEST(VectorsTest, ModelChangeReembedsInTheBackgroundAndKeepsServing) {
  ENGRAM_REQUIRE_BINARY();
  // 1. Store memories with no embedder at all: BM25 only, no vectors in the store.
  ServerProcess bm25_only({.extra_args = {"--embedder", "none", "--retrieval", "bm25"}});
  bm25_only.KeepDataDir(true);
  ASSERT_TRUE(bm25_only.Start());
  const std::string user = UniqueId("eval:run:vectors");
  {
    HttpClient client(bm25_only.BaseUrl());
    json body = AddBody(UniqueId("eval:run:vec"), user, "s",
                        json::array({Message("I enjoy espresso after lunch.", 1704067200000),
                                     Message("The train leaves at noon.", 1704067260000)}));
    HttpResponse resp = client.Post(kAddPath, body);
    ASSERT_EQ(resp.status, 200) << resp.body;
    // No shared words: BM25 cannot find it.
    EXPECT_FALSE(Found(client, user, "what drinks do I like", "espresso"));
  }
  ASSERT_TRUE(bm25_only.Stop().exited);

  // 2. Same data with the built-in model, vector-only retrieval: the memory has no vector yet, so
  // it is embedded in the background; the server answers meanwhile, and soon finds it.
  ServerProcess with_model(
      {.extra_args = {"--retrieval", "vector"}, .data_dir = bm25_only.data_dir()});
  with_model.KeepDataDir(false);
  ASSERT_TRUE(with_model.Start());
  HttpClient client(with_model.BaseUrl());
  bool found = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!found && std::chrono::steady_clock::now() < deadline) {
    found = Found(client, user, "what drinks do I like", "espresso");
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(found) << "the re-embedded memory was never found by vector search";
  // Semantic ranking: the coffee memory ranks above the train one for a drinks question.
  HttpResponse resp = client.Post(kSearchPath, SearchBody(user, "what drinks do I like", 2));
  json data = json::parse(resp.body)["data"];
  ASSERT_EQ(data.size(), 2u);
  EXPECT_NE(ContentText(data[0]["content"]).find("espresso"), std::string::npos) << resp.body;
}

}  // namespace
}  // namespace engram::testing
