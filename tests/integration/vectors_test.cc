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

// Found(), asked again every 100 ms for up to 30 s: vectors are stored in the background.
bool FoundSoon(const HttpClient& client, const std::string& user, const std::string& query,
               const std::string& needle) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    if (Found(client, user, query, needle)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
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
      {.extra_args = {"--retrieval", "vector", "--leaderboard-results", "turns"},
       .data_dir = bm25_only.data_dir()});
  with_model.KeepDataDir(false);
  ASSERT_TRUE(with_model.Start());
  HttpClient client(with_model.BaseUrl());
  const bool found = FoundSoon(client, user, "what drinks do I like", "espresso");
  EXPECT_TRUE(found) << "the re-embedded memory was never found by vector search";
  // Semantic ranking: the coffee memory ranks above the train one for a drinks question.
  HttpResponse resp = client.Post(kSearchPath, SearchBody(user, "what drinks do I like", 2));
  json data = json::parse(resp.body)["data"];
  ASSERT_EQ(data.size(), 2u);
  EXPECT_NE(ContentText(data[0]["content"]).find("espresso"), std::string::npos) << resp.body;
}

// Switching the built-in model's arithmetic (here float32 -> int8, e.g. a data directory moved to
// a CPU where `--embed-precision auto` picks int8) changes the vectors' model id:
// the stored float32 vectors are not used for int8 queries but re-embedded in the background, and
// the int8 vectors, once stored, are used as they are after the next restart.
TEST(VectorsTest, PrecisionChangeReembedsOnceWithTheNewModelId) {
  ENGRAM_REQUIRE_BINARY();
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw")) {
    GTEST_SKIP() << "CPU lacks AVX512_VNNI: --embed-precision int8 is refused there";
  }
  const std::string user = UniqueId("eval:run:precision");
  std::string data_dir;
  {
    ServerProcess fp32({.extra_args = {"--retrieval", "vector", "--embed-precision", "fp32",
                                       "--leaderboard-results", "turns"}});
    fp32.KeepDataDir(true);
    ASSERT_TRUE(fp32.Start());
    data_dir = fp32.data_dir();
    HttpClient client(fp32.BaseUrl());
    json body = AddBody(UniqueId("eval:run:prec"), user, "s",
                        json::array({Message("I enjoy espresso after lunch.", 1704067200000),
                                     Message("The train leaves at noon.", 1704067260000)}));
    ASSERT_EQ(client.Post(kAddPath, body).status, 200);
    const bool found = FoundSoon(client, user, "what drinks do I like", "espresso");
    ASSERT_TRUE(found) << "float32 vectors were never stored";
    ASSERT_TRUE(fp32.Stop().exited);
  }
  for (int run = 0; run < 2; ++run) {
    ServerProcess int8({.extra_args = {"--retrieval", "vector", "--embed-precision", "int8",
                                       "--leaderboard-results", "turns"},
                        .data_dir = data_dir});
    int8.KeepDataDir(run == 0);
    ASSERT_TRUE(int8.Start());
    HttpClient client(int8.BaseUrl());
    const bool found = FoundSoon(client, user, "what drinks do I like", "espresso");
    EXPECT_TRUE(found) << "run " << run;
    HttpResponse resp = client.Post(kSearchPath, SearchBody(user, "what drinks do I like", 2));
    json data = json::parse(resp.body)["data"];
    ASSERT_EQ(data.size(), 2u);
    EXPECT_NE(ContentText(data[0]["content"]).find("espresso"), std::string::npos) << resp.body;
    ASSERT_TRUE(int8.Stop().exited);
    // The first int8 server re-embeds both memories; the second finds int8 vectors stored.
    const bool backfilled =
        int8.Output().find("vector backfill: 2 memories queued") != std::string::npos;
    EXPECT_EQ(backfilled, run == 0) << "run " << run << ":\n" << int8.Output();
  }
}

}  // namespace
}  // namespace engram::testing
