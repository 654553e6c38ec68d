#include "api/leaderboard_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/envelope.h"
#include "common/time_util.h"

namespace engram {
namespace {

TEST(LeaderboardApiTest, ParsesAdd) {
  auto r = ParseLeaderboardAdd(R"({"request_id":"r1","user_id":"u","session_id":"s",
      "messages":[{"role":"user","timestamp":1704067200000,"content":"hello"},
                  {"role":"assistant","content":[{"type":"text","text":"hi"}]}]})",
                               {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].timestamp_ms, 1704067200000);
  EXPECT_FALSE(r->messages[0].content_is_parts);
  EXPECT_TRUE(r->messages[1].content_is_parts);
  EXPECT_EQ(r->response_json,
            R"({"request_id":"r1","session_id":"s","success":true,"user_id":"u"})");
}

TEST(LeaderboardApiTest, BodyHashIgnoresKeyOrderAndWhitespace) {
  auto a = ParseLeaderboardAdd(
      R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":"x"}]})",
      {});
  auto b = ParseLeaderboardAdd(
      R"({ "messages":[{"content":"x","role":"user"}], "session_id":"s","user_id":"u","request_id":"r"})",
      {});
  auto c = ParseLeaderboardAdd(
      R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":"y"}]})",
      {});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->body_hash, b->body_hash);
  EXPECT_NE(a->body_hash, c->body_hash);
}

struct BadCase {
  const char* body;
  const char* message;
};

TEST(LeaderboardApiTest, AddValidationMessagesNameTheField) {
  const BadCase cases[] = {
      {R"({"user_id":"u","session_id":"s","messages":[{"role":"user","content":"x"}]})",
       "request_id is required"},
      {R"({"request_id":"r","session_id":"s","messages":[{"role":"user","content":"x"}]})",
       "user_id is required"},
      {R"({"request_id":"r","user_id":"u","messages":[{"role":"user","content":"x"}]})",
       "session_id is required"},
      {R"({"request_id":"r","user_id":"u","session_id":"s"})", "messages is required"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[]})",
       "messages must not be empty"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":{}})",
       "messages must be an array"},
      {R"({"request_id":"r","user_id":7,"session_id":"s","messages":[{"role":"user","content":"x"}]})",
       "user_id must be a string, got a number"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"system","content":"x"}]})",
       "messages[0].role must be one of user, assistant; got \"system\""},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user"}]})",
       "messages[0].content is required"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":"x","timestamp":"1"}]})",
       "messages[0].timestamp must be an integer, got a string"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":"x","timestamp":-5}]})",
       "messages[0].timestamp must be between 0 and 253402300799999, got -5"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":["x"]})",
       "messages[0] must be an object"},
  };
  for (const auto& c : cases) {
    auto r = ParseLeaderboardAdd(c.body, {});
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidParameter) << c.body;
    EXPECT_EQ(r.status().message(), c.message) << c.body;
  }
}

TEST(LeaderboardApiTest, SearchValidation) {
  auto ok = ParseLeaderboardSearch(R"({"query":"q","user_id":"u","options":["A. x"]})", {});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->top_k, 10);
  EXPECT_EQ(ok->options.size(), 1u);
  EXPECT_FALSE(ok->reference_us.has_value());
  auto dated = ParseLeaderboardSearch(
      R"({"query":"q","user_id":"u","reference_date":"2023-05-30T10:18:00Z"})", {});
  ASSERT_TRUE(dated.ok());
  EXPECT_EQ(dated->reference_us, ParseIsoToMicros("2023-05-30T10:18:00Z"));
  auto seconds =
      ParseLeaderboardSearch(R"({"query":"q","user_id":"u","reference_date":86400})", {});
  ASSERT_TRUE(seconds.ok());
  EXPECT_EQ(seconds->reference_us, 86400LL * 1000000);
  const BadCase cases[] = {
      {R"({"user_id":"u"})", "query is required"},
      {R"({"query":"","user_id":"u"})", "query must not be empty"},
      {R"({"query":"q"})", "user_id is required"},
      {R"({"query":"q","user_id":"u","top_k":0})", "top_k must be between 1 and 100, got 0"},
      {R"({"query":"q","user_id":"u","top_k":101})", "top_k must be between 1 and 100, got 101"},
      {R"({"query":"q","user_id":"u","top_k":"5"})", "top_k must be an integer, got a string"},
      {R"({"query":"q","user_id":"u","options":"A"})", "options must be an array of strings"},
      {R"({"query":"q","user_id":"u","options":[1]})", "options[0] must be a string"},
      {R"({"query":"q","user_id":"u","reference_date":"last week"})",
       "reference_date must be Unix seconds or an ISO 8601 date-time, e.g. 2024-05-01T10:00:00Z"},
      {R"({"query":"q","user_id":"u","reference_date":-1})",
       "reference_date must be Unix seconds between 0 and 253402300799"},
      {R"({"query":"q","user_id":"u","reference_date":[]})",
       "reference_date must be a number or a string, got an array"},
  };
  for (const auto& c : cases) {
    auto r = ParseLeaderboardSearch(c.body, {});
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().message(), c.message) << c.body;
    // An integer top_k out of range is 422 (kOutOfRange); everything else here is 400.
    const bool out_of_range =
        std::string_view(c.message).find("between 1 and 100") != std::string_view::npos;
    EXPECT_EQ(r.status().code(),
              out_of_range ? StatusCode::kOutOfRange : StatusCode::kInvalidParameter)
        << c.body;
  }
}

TEST(LeaderboardApiTest, DatedText) {
  EXPECT_EQ(DatedText(1704067200000000LL, "hello"), "[2024-01-01 (Mon) 00:00 UTC] hello");
}

TEST(LeaderboardApiTest, ExcerptHeaderNamesTheLinesTheMessageAndItsFirstLine) {
  LeaderboardExcerpt e{.role = "user",
                       .title = "File: /usr/include/stdio.h",
                       .first_line = 120,
                       .last_line = 178,
                       .lines = 612,
                       .bytes = 21900};
  EXPECT_EQ(ExcerptHeader(e),
            "lines 120-178 of 612 of a 21 KB user message that begins \"File: "
            "/usr/include/stdio.h\":\n");
  // From the first line on, the excerpt shows the title itself.
  e.first_line = 1;
  e.role = "assistant";
  e.bytes = 300;
  EXPECT_EQ(ExcerptHeader(e), "lines 1-178 of 612 of a 1 KB assistant message:\n");
}

}  // namespace
}  // namespace engram

namespace engram {
namespace {

TEST(LeaderboardApiTest, AcceptsWhatRealBenchmarkDataHolds) {
  auto r = ParseLeaderboardAdd(R"({"request_id":"r","user_id":"u","session_id":"s","messages":[
      {"role":"User","content":""},
      {"role":" ASSISTANT ","content":"   "},
      {"role":"assistant","content":[]},
      {"role":"user","content":[{"type":"text","text":" "}]},
      {"role":"user","content":"same"},
      {"role":"user","content":"same","timestamp":1704067200000.7},
      {"role":"user","content":"no time","timestamp":null}]})",
                               {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->messages.size(), 7u);
  EXPECT_EQ(r->messages[0].role, "user");
  EXPECT_EQ(r->messages[1].role, "assistant");
  EXPECT_TRUE(r->messages[2].parts.empty());
  EXPECT_EQ(r->messages[5].timestamp_ms, 1704067200000) << "a fraction of a millisecond is cut";
  EXPECT_FALSE(r->messages[6].timestamp_ms.has_value());
  // A long message (over the former 1 MiB limit).
  std::string long_text(2 << 20, 'a');
  auto big = ParseLeaderboardAdd(
      R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":")" +
          long_text + R"("}]})",
      {});
  EXPECT_TRUE(big.ok()) << big.status().ToString();
}

TEST(LeaderboardApiTest, StillRefusesWhatIsGenuinelyInvalid) {
  const BadCase cases[] = {
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"tool","content":"x"}]})",
       "messages[0].role must be one of user, assistant; got \"tool\""},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":null}]})",
       "messages[0].content is required"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":"x","timestamp":-1.5}]})",
       "messages[0].timestamp must be between 0 and 253402300799999, got -1.5"},
      {R"({"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"user","content":[{"type":"audio"}]}]})",
       "messages[0].content[0].type must be one of text, image_url, image; got \"audio\""},
  };
  for (const auto& c : cases) {
    auto r = ParseLeaderboardAdd(c.body, {});
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().message(), c.message) << c.body;
  }
}

TEST(LeaderboardApiTest, RetryAfterIsOnEvery429And503) {
  for (StatusCode code : {StatusCode::kThrottled, StatusCode::kUnavailable}) {
    HttpResponse r = ErrorResponse(Status(code, "busy"), "id", 1.0);
    bool found = false;
    for (const auto& [name, value] : r.headers)
      found = found || (name == "Retry-After" && value == "1");
    EXPECT_TRUE(found) << r.status;
  }
  HttpResponse ok = ErrorResponse(Status::InvalidParameter("x"), "id", 1.0);
  EXPECT_TRUE(ok.headers.empty());
  HttpResponse health = JsonResponse(503, nlohmann::json{{"status", "unavailable"}});
  ASSERT_EQ(health.headers.size(), 1u);
  AddRetryAfter(health, 7);  // never twice
  EXPECT_EQ(health.headers.size(), 1u);
}

}  // namespace
}  // namespace engram
