#include "extract/llm_reranker.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(LlmRerankerTest, ParsesARanking) {
  auto r = LlmReranker::ParseAnswer(R"({"ranking": [2, 0]})", 3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (std::vector<size_t>{2, 0}));
  auto empty = LlmReranker::ParseAnswer(R"({"ranking": []})", 3);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(LlmRerankerTest, RefusesAnythingElse) {
  for (const char* bad :
       {"", "not json", "[1, 2]", R"({"order": [1]})", R"({"ranking": "1"})", R"({"ranking": [3]})",
        R"({"ranking": [-1]})", R"({"ranking": [1, 1]})", R"({"ranking": [1.5]})",
        R"({"ranking": ["1"]})", R"({"ranking": [null]})"}) {
    auto r = LlmReranker::ParseAnswer(bad, 3);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << bad;
    }
  }
}

TEST(LlmRerankerTest, CreateChecksItsOptions) {
  EXPECT_FALSE(LlmReranker::Create({}).ok());  // no endpoint
  LlmRerankerOptions o;
  o.chat.base_url = "http://127.0.0.1:1/v1";
  o.chat.model = "m";
  o.max_candidate_chars = 4;
  EXPECT_FALSE(LlmReranker::Create(o).ok());
  o.max_candidate_chars = 800;
  EXPECT_TRUE(LlmReranker::Create(o).ok());
}

TEST(LlmRerankerTest, AnUnreachableEndpointIsAnErrorNotAHang) {
  LlmRerankerOptions o;
  o.chat.base_url = "http://127.0.0.1:1/v1";  // nothing listens on port 1
  o.chat.model = "m";
  o.chat.max_retries = 0;
  o.chat.request_timeout = std::chrono::milliseconds(500);
  auto reranker = LlmReranker::Create(o);
  ASSERT_TRUE(reranker.ok());
  auto r = (*reranker)->Rerank("q", {"a", "b"});
  EXPECT_FALSE(r.ok());
  // Nothing to rank needs no call.
  auto none = (*reranker)->Rerank("q", {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace engram
