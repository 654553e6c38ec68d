#include "extract/llm_extractor.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/time_util.h"
#include "extract/llm_extractor_test_support.h"
#include "server/http_server.h"

namespace engram {
namespace {

using json = nlohmann::json;
using testing::Completion;
using testing::ExpectMalformed;
using testing::FakeLlm;
using testing::JsonCompletion;
using testing::JsonResponse;
using testing::kSecret;
using testing::MakeExtractor;
using testing::SystemPrompt;
using testing::TestOptions;
using testing::UserPayload;

int64_t Micros(const char* iso) { return *ParseIsoToMicros(iso); }

std::vector<ConversationMessage> Conversation() {
  return {{"user", "I moved to Lyon yesterday. I'm vegetarian.", Micros("2024-03-12T09:30:00Z")},
          {"assistant", "Welcome to Lyon!", Micros("2024-03-12T09:30:05Z")},
          {"user", "   ", Micros("2024-03-12T09:31:00Z")}};
}

// Runs one extraction against an endpoint answering `content` and returns the status.
Status ExtractionStatus(const std::string& content, size_t max_facts = 100,
                        size_t max_fact_bytes = 2000) {
  FakeLlm fake([&](const json&, int) { return Completion(content); });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.max_facts = max_facts;
  o.max_fact_bytes = max_fact_bytes;
  auto extractor = MakeExtractor(o);
  auto facts = extractor->ExtractFacts({{"user", std::string("I live in ") + kSecret, 0}});
  EXPECT_EQ(fake.requests(), 1) << content;  // a nonsensical answer is not retried
  return facts.ok() ? Status::Ok() : facts.status();
}

TEST(LlmExtractorTest, FactsCiteTheirSourcesAndSpeakersAreNamed) {
  FakeLlm fake([](const json&, int) {
    return JsonCompletion(
        {{"facts",
          {{{"text", "Caroline adopted a dog named Biscuit"}, {"sources", {2, "0", 2}}},
           {{"text", "The assistant recommended a vet to Caroline"}, {"sources", {1}}},
           {{"text", "Caroline lives in Oslo"}}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  std::vector<ConversationMessage> messages = {
      {"user", "We got a puppy!", 0, "Caroline"},
      {"assistant", "Congratulations! Dr. Vik is a good vet.", 0, ""},
      {"user", "His name is Biscuit.", 0, "Caroline"}};
  auto facts = extractor->ExtractFacts(messages);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  ASSERT_EQ(facts->size(), 3u);
  EXPECT_EQ((*facts)[0].sources, std::vector<int32_t>({0, 2}));  // sorted, distinct
  EXPECT_EQ((*facts)[1].sources, std::vector<int32_t>({1}));
  EXPECT_EQ((*facts)[2].sources, std::vector<int32_t>({0, 1, 2}));  // none given: all sent
  json payload = UserPayload(fake.body(0));
  EXPECT_EQ(payload["messages"][0]["name"], "Caroline");
  EXPECT_FALSE(payload["messages"][1].contains("name"));
  EXPECT_FALSE(payload["messages"][1].contains("time"));
  std::string system = SystemPrompt(fake.body(0));
  EXPECT_NE(system.find("\"name\""), std::string::npos);
  EXPECT_NE(system.find("The assistant"), std::string::npos);
}

TEST(LlmExtractorTest, NameNamesTheModel) {
  auto extractor = MakeExtractor(TestOptions("http://127.0.0.1:1/v1"));
  EXPECT_EQ(extractor->name(), "llm:test-model");
}

TEST(LlmExtractorTest, ExtractsFactsAndSendsAWellFormedRequest) {
  FakeLlm fake([](const json&, int) {
    return JsonCompletion({{"facts",
                            {" User moved to Lyon on 2024-03-11 ", "User is vegetarian",
                             "user is VEGETARIAN"}}});  // padded, then a case-only duplicate
  });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.chat.api_key = "sk-test-123";
  auto extractor = MakeExtractor(o);

  auto facts = extractor->ExtractFacts(Conversation());
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(FactTexts(*facts),
            std::vector<std::string>({"User moved to Lyon on 2024-03-11", "User is vegetarian"}));
  // Plain strings cite every message sent (the blank one was not sent).
  EXPECT_EQ((*facts)[0].sources, std::vector<int32_t>({0, 1}));

  ASSERT_EQ(fake.requests(), 1);
  EXPECT_EQ(fake.path(0), "POST /v1/chat/completions");
  EXPECT_EQ(fake.authorization(0), "Bearer sk-test-123");
  json req = fake.body(0);
  EXPECT_EQ(req["model"], "test-model");
  EXPECT_EQ(req["temperature"], 0.0);
  EXPECT_EQ(req["max_tokens"], 4096);
  EXPECT_EQ(req["stream"], false);
  EXPECT_EQ(req["response_format"], json({{"type", "json_object"}}));
  ASSERT_EQ(req["messages"].size(), 2u);
  EXPECT_EQ(req["messages"][0]["role"], "system");
  EXPECT_EQ(req["messages"][1]["role"], "user");
  std::string system = SystemPrompt(req);
  EXPECT_EQ(system.rfind("Task: engram.extract_facts.v2\n", 0), 0u);
  EXPECT_NE(system.find("JSON"), std::string::npos);  // OpenAI's json_object mode requires it
  EXPECT_NE(system.find("{\"facts\": ["), std::string::npos);
  EXPECT_NE(system.find("At most 100 facts"), std::string::npos);

  // Blank messages are left out; each message carries its time with the weekday.
  json payload = UserPayload(req);
  EXPECT_EQ(payload, json({{"messages",
                            {{{"index", 0},
                              {"role", "user"},
                              {"time", "2024-03-12 09:30 UTC (Tuesday)"},
                              {"content", "I moved to Lyon yesterday. I'm vegetarian."}},
                             {{"index", 1},
                              {"role", "assistant"},
                              {"time", "2024-03-12 09:30 UTC (Tuesday)"},
                              {"content", "Welcome to Lyon!"}}}}}));
}

TEST(LlmExtractorTest, UnknownTimeIsLeftOut) {
  FakeLlm fake([](const json&, int) { return JsonCompletion({{"facts", json::array()}}); });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto facts = extractor->ExtractFacts({{"user", "hello", 0}});
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_TRUE(facts->empty());
  EXPECT_EQ(UserPayload(fake.body(0)),
            json({{"messages", {{{"index", 0}, {"role", "user"}, {"content", "hello"}}}}}));
}

TEST(LlmExtractorTest, EmptyConversationSendsNothing) {
  FakeLlm fake([](const json&, int) { return JsonCompletion({{"facts", {"x"}}}); });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto none = extractor->ExtractFacts({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto blank = extractor->ExtractFacts({{"user", " \n\t", 1}});
  ASSERT_TRUE(blank.ok());
  EXPECT_TRUE(blank->empty());
  EXPECT_EQ(fake.requests(), 0);
}

TEST(LlmExtractorTest, JsonResponseFormatCanBeTurnedOff) {
  FakeLlm fake([](const json&, int) { return JsonCompletion({{"facts", {"User likes tea"}}}); });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.json_response_format = false;
  auto extractor = MakeExtractor(o);
  ASSERT_TRUE(extractor->ExtractFacts({{"user", "I like tea", 0}}).ok());
  EXPECT_FALSE(fake.body(0).contains("response_format"));
  EXPECT_EQ(fake.authorization(0), "");  // no key configured: no header
}

TEST(LlmExtractorTest, ToleratesFencesAndThinkBlocks) {
  const std::vector<std::string> contents = {
      "```json\n{\"facts\": [\"User likes tea\"]}\n```",
      "```\n{\"facts\": [\"User likes tea\"]}```",
      "<think>The user said they like tea.</think>\n{\"facts\": [\"User likes tea\"]}",
      "  \n{\"facts\": [\"User likes tea\"], \"note\": \"extra keys are ignored\"}\n",
  };
  for (const std::string& c : contents) {
    FakeLlm fake([&](const json&, int) { return Completion(c); });
    auto extractor = MakeExtractor(TestOptions(fake.base_url()));
    auto facts = extractor->ExtractFacts({{"user", "I like tea", 0}});
    ASSERT_TRUE(facts.ok()) << c << ": " << facts.status().ToString();
    EXPECT_EQ(FactTexts(*facts), std::vector<std::string>({"User likes tea"})) << c;
  }
}

TEST(LlmExtractorTest, MalformedExtractionOutputIsAnErrorWithoutConversationText) {
  const std::string s = kSecret;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"I think the user lives in " + s, "not valid JSON"},
      {"{\"facts\": [\"User lives in " + s + "\"", "not valid JSON"},  // cut short
      {"[\"User lives in " + s + "\"]", "not a JSON object"},
      {"{\"memories\": [\"User lives in " + s + "\"]}", "no \"facts\" array"},
      {"{\"facts\": \"User lives in " + s + "\"}", "no \"facts\" array"},
      {"{\"facts\": [\"User lives in " + s + "\", 42]}",
       "fact 1 is neither a string nor an object"},
      {"{\"facts\": [{\"txt\": \"" + s + "\"}]}", "fact 0 has no \"text\" string"},
      {"{\"facts\": [{\"text\": \"" + s + "\", \"sources\": [7]}]}",
       "fact 0 cites a message that was not sent"},
      {"{\"facts\": [{\"text\": \"" + s + "\", \"sources\": 0}]}",
       "fact 0 has \"sources\" that is not an array"},
      {"{\"facts\": [\"User lives in " + s + "\", \"  \"]}", "fact 1 is empty"},
      {"{\"facts\": [null]}", "fact 0 is neither a string nor an object"},
      {"", "not valid JSON"},
  };
  for (const auto& [content, what] : cases) {
    ExpectMalformed(ExtractionStatus(content), "extraction", what, content);
  }
}

TEST(LlmExtractorTest, ExtractionLimitsCountAndLength) {
  json many = {{"facts", {"a", "b", "c", "d"}}};
  ExpectMalformed(ExtractionStatus(many.dump(), /*max_facts=*/3), "extraction",
                  "4 facts, more than the limit of 3", "count");
  ASSERT_TRUE(ExtractionStatus(many.dump(), /*max_facts=*/4).ok());

  json long_fact = {{"facts", {"short", std::string("User lives in ") + kSecret}}};
  ExpectMalformed(ExtractionStatus(long_fact.dump(), 100, /*max_fact_bytes=*/10), "extraction",
                  "fact 1 is longer than 10 bytes", "length");
}

TEST(LlmExtractorTest, UnusableCompletionsAreErrors) {
  struct Case {
    HttpResponse response;
    std::string what;
  };
  HttpResponse null_content = JsonResponse(
      200, {{"choices", {{{"message", {{"role", "assistant"}, {"content", nullptr}}}}}}});
  HttpResponse refusal = JsonResponse(
      200,
      {{"choices",
        {{{"message", {{"role", "assistant"}, {"content", nullptr}, {"refusal", kSecret}}}}}}});
  HttpResponse no_choices = JsonResponse(200, {{"choices", json::array()}});
  HttpResponse not_json;
  not_json.body = std::string("<html>") + kSecret;
  const std::vector<Case> cases = {
      {Completion("{\"facts\": [\"User lives in", "length"), "cut off at max_tokens"},
      {Completion("", "content_filter"), "content filter"},
      {null_content, "no string \"content\""},
      {refusal, "refused"},
      {no_choices, "empty \"choices\""},
      {not_json, "malformed chat completion response: not valid JSON"},
  };
  for (const Case& c : cases) {
    FakeLlm fake([&](const json&, int) { return c.response; });
    auto extractor = MakeExtractor(TestOptions(fake.base_url()));
    auto facts = extractor->ExtractFacts({{"user", kSecret, 0}});
    ASSERT_FALSE(facts.ok()) << c.what;
    EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(facts.status().message().find(c.what), std::string::npos) << facts.status().message();
    EXPECT_EQ(facts.status().message().find(kSecret), std::string::npos)
        << facts.status().message();
    EXPECT_EQ(fake.requests(), 1) << c.what;
  }
}

}  // namespace
}  // namespace engram
