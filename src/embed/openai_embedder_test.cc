#include "embed/openai_embedder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fake_openai_endpoint.h"
#include "server/http_server.h"

namespace engram {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A deterministic, non-normalised vector per text, so tests can tell vectors (and their order)
// apart and check that the client normalised them.
std::vector<double> FakeVector(const std::string& text, int dimension) {
  size_t h = std::hash<std::string>{}(text);
  std::vector<double> v(dimension);
  for (int j = 0; j < dimension; ++j) v[j] = static_cast<double>((h >> (j % 56)) & 0xff) + 1.0 + j;
  return v;
}

std::vector<float> Normalised(const std::vector<double>& v) {
  double n2 = 0;
  for (double x : v) n2 += x * x;
  std::vector<float> out;
  for (double x : v) out.push_back(static_cast<float>(x / std::sqrt(n2)));
  return out;
}

using testing::JsonResponse;

// What a well-behaved server answers; `reverse` lists the items in reverse order.
HttpResponse Embeddings(const json& request, int dimension, bool reverse = false) {
  json data = json::array();
  const json& input = request.at("input");
  for (size_t i = 0; i < input.size(); ++i) {
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", FakeVector(input[i].get<std::string>(), dimension)}});
  }
  if (reverse) std::reverse(data.begin(), data.end());
  return JsonResponse(200, {{"object", "list"}, {"data", data}, {"model", request.at("model")}});
}

using FakeOpenAi = testing::FakeOpenAiEndpoint;

OpenAiEmbedderOptions TestOptions(const FakeOpenAi& fake, int dimensions = 16) {
  OpenAiEmbedderOptions o;
  o.base_url = fake.base_url();
  o.model = "test-model";
  o.dimensions = dimensions;
  o.retry_base = 5ms;  // keep retry tests fast
  return o;
}

std::vector<std::string> Texts(size_t n, const std::string& prefix = "text ") {
  std::vector<std::string> t;
  for (size_t i = 0; i < n; ++i) t.push_back(prefix + std::to_string(i));
  return t;
}

void ExpectVectors(const std::vector<std::string>& texts,
                   const std::vector<std::vector<float>>& vectors, int dimension) {
  ASSERT_EQ(vectors.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<float> expected = Normalised(FakeVector(texts[i], dimension));
    ASSERT_EQ(vectors[i].size(), expected.size()) << i;
    double n2 = 0;
    for (size_t j = 0; j < expected.size(); ++j) {
      EXPECT_NEAR(vectors[i][j], expected[j], 1e-6) << "text " << i << " component " << j;
      n2 += double(vectors[i][j]) * vectors[i][j];
    }
    EXPECT_NEAR(n2, 1.0, 1e-5) << i;
  }
}

TEST(OpenAiEmbedderTest, SplitsLargeBatchesAndReturnsNormalisedVectorsInOrder) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 16); });
  OpenAiEmbedderOptions o = TestOptions(fake);
  o.max_batch_texts = 64;
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok()) << embedder.status().ToString();
  EXPECT_EQ(fake.requests(), 0);  // dimensions given: no probe

  std::vector<std::string> texts = Texts(150);
  auto vectors = (*embedder)->EmbedBatch(texts);
  ASSERT_TRUE(vectors.ok()) << vectors.status().ToString();
  ExpectVectors(texts, *vectors, 16);

  ASSERT_EQ(fake.requests(), 3);
  EXPECT_EQ(fake.body(0)["input"].size(), 64u);
  EXPECT_EQ(fake.body(1)["input"].size(), 64u);
  EXPECT_EQ(fake.body(2)["input"].size(), 22u);
  EXPECT_EQ(fake.body(2)["input"][0], "text 128");
  EXPECT_EQ(fake.path(0), "POST /v1/embeddings");
  EXPECT_EQ(fake.body(0)["model"], "test-model");
  EXPECT_EQ(fake.body(0)["encoding_format"], "float");
  EXPECT_EQ(fake.body(0)["dimensions"], 16);
}

TEST(OpenAiEmbedderTest, SplitsByBytesAndSendsEmptyTextAsSpace) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 4); });
  OpenAiEmbedderOptions o = TestOptions(fake, 4);
  o.base_url += "/";  // a trailing slash must not produce "//embeddings"
  o.max_batch_bytes = 10;
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok()) << embedder.status().ToString();

  std::vector<std::string> texts = {"aaaa", "bbbb", "cccc", "", "a text longer than the limit"};
  auto vectors = (*embedder)->EmbedBatch(texts);
  ASSERT_TRUE(vectors.ok()) << vectors.status().ToString();
  ASSERT_EQ(fake.requests(), 3);
  EXPECT_EQ(fake.path(0), "POST /v1/embeddings");
  EXPECT_EQ(fake.body(0)["input"], json({"aaaa", "bbbb"}));
  EXPECT_EQ(fake.body(1)["input"], json({"cccc", " "}));
  EXPECT_EQ(fake.body(2)["input"], json({"a text longer than the limit"}));  // alone, not cut
  texts[3] = " ";  // what the server embedded
  ExpectVectors(texts, *vectors, 4);
}

TEST(OpenAiEmbedderTest, ReordersItemsByIndex) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 8, /*reverse=*/true); });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 8));
  ASSERT_TRUE(embedder.ok()) << embedder.status().ToString();
  std::vector<std::string> texts = Texts(10);
  auto vectors = (*embedder)->EmbedBatch(texts);
  ASSERT_TRUE(vectors.ok()) << vectors.status().ToString();
  ExpectVectors(texts, *vectors, 8);
}

TEST(OpenAiEmbedderTest, SendsBearerKeyOnlyWhenSet) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 4); });
  OpenAiEmbedderOptions o = TestOptions(fake, 4);
  o.api_key = "sk-test-123";
  auto with_key = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(with_key.ok());
  ASSERT_TRUE((*with_key)->Embed("x").ok());
  o.api_key.clear();
  auto without_key = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(without_key.ok());
  ASSERT_TRUE((*without_key)->Embed("x").ok());

  ASSERT_EQ(fake.requests(), 2);
  EXPECT_EQ(fake.authorization(0), "Bearer sk-test-123");
  EXPECT_EQ(fake.authorization(1), "");
}

TEST(OpenAiEmbedderTest, ProbesDimensionWhenNotGiven) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 12); });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, /*dimensions=*/0));
  ASSERT_TRUE(embedder.ok()) << embedder.status().ToString();
  ASSERT_EQ(fake.requests(), 1);
  EXPECT_FALSE(fake.body(0).contains("dimensions"));
  EXPECT_EQ((*embedder)->dimension(), 12);
  EXPECT_EQ((*embedder)->model_id(), "openai:test-model@12");

  auto v = (*embedder)->Embed("hello");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->size(), 12u);
  EXPECT_FALSE(fake.body(1).contains("dimensions"));
}

TEST(OpenAiEmbedderTest, ModelIdNamesModelAndDimension) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 256); });
  OpenAiEmbedderOptions o = TestOptions(fake, 256);
  o.model = "text-embedding-3-small";
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok());
  EXPECT_EQ((*embedder)->model_id(), "openai:text-embedding-3-small@256");
  EXPECT_EQ((*embedder)->dimension(), 256);
}

TEST(OpenAiEmbedderTest, DimensionMismatchIsAnError) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 8); });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 16));
  ASSERT_TRUE(embedder.ok());
  auto v = (*embedder)->EmbedBatch(Texts(3));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(v.status().message().find("dimension"), std::string::npos) << v.status().message();
}

TEST(OpenAiEmbedderTest, RetriesServerErrorsThenSucceeds) {
  FakeOpenAi fake([](const json& body, int n) {
    if (n <= 2) return JsonResponse(500, {{"error", {{"message", "overloaded"}}}});
    return Embeddings(body, 4);
  });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 4));
  ASSERT_TRUE(embedder.ok());
  std::vector<std::string> texts = Texts(5);
  auto v = (*embedder)->EmbedBatch(texts);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(fake.requests(), 3);
  ExpectVectors(texts, *v, 4);
}

TEST(OpenAiEmbedderTest, RetriesThrottling) {
  FakeOpenAi fake([](const json& body, int n) {
    if (n == 1) return JsonResponse(429, {{"error", {{"message", "rate limit"}}}});
    return Embeddings(body, 4);
  });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 4));
  ASSERT_TRUE(embedder.ok());
  auto v = (*embedder)->Embed("x");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(fake.requests(), 2);
}

TEST(OpenAiEmbedderTest, HonoursRetryAfter) {
  FakeOpenAi fake([](const json& body, int n) {
    if (n == 1) {
      HttpResponse r = JsonResponse(429, {{"error", {{"message", "slow down"}}}});
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    return Embeddings(body, 4);
  });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 4));  // retry_base 5 ms
  ASSERT_TRUE(embedder.ok());
  auto start = Clock::now();
  auto v = (*embedder)->Embed("x");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_GE(Clock::now() - start, 950ms);
  EXPECT_EQ(fake.requests(), 2);
}

TEST(OpenAiEmbedderTest, GivesUpAfterMaxRetries) {
  FakeOpenAi fake([](const json&, int) {
    return JsonResponse(503, {{"error", {{"message", "model loading"}}}});
  });
  OpenAiEmbedderOptions o = TestOptions(fake, 4);
  o.max_retries = 2;
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok());
  auto v = (*embedder)->Embed("x");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(v.status().message().find("answered HTTP 503"), std::string::npos)
      << v.status().message();
  EXPECT_NE(v.status().message().find("after 3 attempts"), std::string::npos);
  EXPECT_EQ(fake.requests(), 3);
}

TEST(OpenAiEmbedderTest, ClientErrorIsNotRetriedAndCarriesOnlyTheStatusCode) {
  const std::string long_tail(500, 'z');
  FakeOpenAi fake([&](const json&, int) {
    return JsonResponse(400, {{"error",
                               {{"message",
                                 "This model's maximum context length is 8192 "
                                 "tokens " +
                                     long_tail},
                                {"type", "invalid_request_error"}}}});
  });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 4));
  ASSERT_TRUE(embedder.ok());
  auto v = (*embedder)->Embed("x");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidParameter);
  const std::string& m = v.status().message();
  EXPECT_NE(m.find("answered HTTP 400"), std::string::npos) << m;
  // Error bodies may echo the texts sent for embedding: none of the server's words are kept.
  EXPECT_EQ(m.find("maximum context"), std::string::npos) << m;
  EXPECT_LT(m.size(), 200u);
  EXPECT_EQ(fake.requests(), 1);
}

TEST(OpenAiEmbedderTest, UnauthorizedIsUnavailableAndNeverShowsTheKey) {
  FakeOpenAi fake([](const json&, int) {
    return JsonResponse(401,
                        {{"error", {{"message", "Incorrect API key provided: sk-secret-42"}}}});
  });
  OpenAiEmbedderOptions o = TestOptions(fake, 4);
  o.api_key = "sk-secret-42";
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok());
  auto v = (*embedder)->Embed("x");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(v.status().message().find("sk-secret-42"), std::string::npos) << v.status().message();
  EXPECT_NE(v.status().message().find("answered HTTP 401"), std::string::npos);
  EXPECT_EQ(fake.requests(), 1);
}

TEST(OpenAiEmbedderTest, MalformedResponsesAreErrors) {
  const std::vector<std::string> bodies = {
      "{not json",
      "[]",
      R"({"object": "list"})",
      R"({"data": [{"index": 0, "embedding": [1, 0]}]})",  // 1 of 2
      R"({"data": [{"index": 0, "embedding": [1, 0]}, {"index": 0, "embedding": [0, 1]}]})",  // dup
      R"({"data": [{"index": 0, "embedding": [1, 0]}, {"index": 2, "embedding": [0, 1]}]})",  // range
      R"({"data": [{"embedding": [1, 0]}, {"embedding": [0, 1]}]})",  // no index
      R"({"data": [{"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": "AAAA"}]})",
      R"({"data": [{"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": [0, "x"]}]})",
      R"({"data": [{"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": [0, 0]}]})",  // zero
      R"({"data": [{"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": [1, 0, 0]}]})",
  };
  for (const std::string& b : bodies) {
    FakeOpenAi fake([&](const json&, int) {
      HttpResponse r;
      r.body = b;
      return r;
    });
    auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 2));
    ASSERT_TRUE(embedder.ok());
    auto v = (*embedder)->EmbedBatch({"a", "b"});
    ASSERT_FALSE(v.ok()) << b;
    EXPECT_EQ(v.status().code(), StatusCode::kUnavailable) << b;
    EXPECT_EQ(fake.requests(), 1) << b;  // a broken answer is not retried
  }
}

TEST(OpenAiEmbedderTest, ResponseLargerThanLimitIsAnError) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 64); });
  OpenAiEmbedderOptions o = TestOptions(fake, 64);
  o.max_response_bytes = 200;
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok());
  auto v = (*embedder)->EmbedBatch(Texts(4));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(v.status().message().find("max_response_bytes"), std::string::npos)
      << v.status().message();
  EXPECT_EQ(fake.requests(), 1);
}

TEST(OpenAiEmbedderTest, TimesOutAndRetriesWithinBudget) {
  FakeOpenAi* self = nullptr;
  FakeOpenAi fake([&](const json& body, int) {
    self->WaitForRelease(10s);  // far beyond the client's timeout; released at teardown
    return Embeddings(body, 4);
  });
  self = &fake;
  OpenAiEmbedderOptions o = TestOptions(fake, 4);
  o.request_timeout = 300ms;
  o.max_retries = 1;
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok());

  auto start = Clock::now();
  auto v = (*embedder)->Embed("x");
  auto elapsed = Clock::now() - start;
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(v.status().message().find("imed out"), std::string::npos) << v.status().message();
  EXPECT_GE(elapsed, 600ms);  // two attempts of 300 ms each
  EXPECT_LT(elapsed, 2s);
  EXPECT_EQ(fake.requests(), 2);
}

TEST(OpenAiEmbedderTest, UnreachableServerFailsCreateWhenProbing) {
  uint16_t port;
  {
    FakeOpenAi closed([](const json& body, int) { return Embeddings(body, 4); });
    port = closed.port();
  }  // stopped: nothing listens on `port` now
  OpenAiEmbedderOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  o.model = "m";
  o.max_retries = 1;
  o.retry_base = 5ms;
  auto start = Clock::now();
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_FALSE(embedder.ok());
  EXPECT_EQ(embedder.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(embedder.status().message().find("dimension probe failed"), std::string::npos)
      << embedder.status().message();
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(OpenAiEmbedderTest, CreateRejectsBadOptions) {
  auto code_of = [](OpenAiEmbedderOptions o) { return OpenAiEmbedder::Create(o).status().code(); };
  OpenAiEmbedderOptions good;
  good.base_url = "http://127.0.0.1:1/v1";
  good.model = "m";
  good.dimensions = 4;
  EXPECT_EQ(code_of(good), StatusCode::kOk);

  auto bad = good;
  bad.base_url = "ftp://example.com/v1";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad.base_url = "";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad.base_url = "http://";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.model = "";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.api_key = "sk\r\nX-Injected: 1";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.max_batch_texts = 0;
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.dimensions = -1;
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.max_retries = -1;
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
}

TEST(OpenAiEmbedderTest, EmptyBatchSendsNothing) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 4); });
  auto embedder = OpenAiEmbedder::Create(TestOptions(fake, 4));
  ASSERT_TRUE(embedder.ok());
  auto v = (*embedder)->EmbedBatch({});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->empty());
  EXPECT_EQ(fake.requests(), 0);
}

TEST(OpenAiEmbedderTest, ConcurrentCallsFromFourThreads) {
  FakeOpenAi fake([](const json& body, int) { return Embeddings(body, 32); });
  OpenAiEmbedderOptions o = TestOptions(fake, 32);
  o.max_batch_texts = 8;
  auto embedder = OpenAiEmbedder::Create(o);
  ASSERT_TRUE(embedder.ok());

  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 10;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCallsPerThread; ++c) {
        std::vector<std::string> texts =
            Texts(20, "thread " + std::to_string(t) + " call " + std::to_string(c) + " text ");
        auto v = (*embedder)->EmbedBatch(texts);
        if (!v.ok()) {
          ++failures;
          continue;
        }
        ExpectVectors(texts, *v, 32);  // gtest assertions are thread-safe on POSIX
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fake.requests(), kThreads * kCallsPerThread * 3);  // 20 texts → 8 + 8 + 4
}

}  // namespace
}  // namespace engram
