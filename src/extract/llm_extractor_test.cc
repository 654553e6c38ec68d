#include "extract/llm_extractor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/time_util.h"
#include "extract/chat_client.h"
#include "server/http_server.h"

namespace engram {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Text that must never leak into a Status: it stands for the user's conversation and memories.
constexpr const char* kSecret = "SECRET-Tokyo-4711";

HttpResponse JsonResponse(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

// A chat completion whose assistant message is `content`.
HttpResponse Completion(const std::string& content, const std::string& finish_reason = "stop") {
  return JsonResponse(200, {{"id", "chatcmpl-1"},
                            {"object", "chat.completion"},
                            {"choices",
                             {{{"index", 0},
                               {"message", {{"role", "assistant"}, {"content", content}}},
                               {"finish_reason", finish_reason}}}}});
}

HttpResponse JsonCompletion(const json& content) { return Completion(content.dump()); }

// A real HTTP server in the test process standing in for an OpenAI-compatible endpoint (as in
// embed/openai_embedder_test.cc). Records every request; `behaviour` decides the answer
// (request_number counts from 1).
class FakeLlm {
 public:
  using Behaviour = std::function<HttpResponse(const json& body, int request_number)>;

  explicit FakeLlm(Behaviour behaviour)
      : behaviour_(std::move(behaviour)),
        server_(
            Options(), [this](const HttpRequest& r) { return Handle(r); },
            [](StatusCode code, const std::string& message) {
              return JsonResponse(HttpStatusOf(code), {{"error", {{"message", message}}}});
            }) {
    Status st = server_.Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }

  ~FakeLlm() {
    Release();
    server_.Stop(1000ms);
  }

  uint16_t port() const { return server_.port(); }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port()) + "/v1"; }

  int requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(bodies_.size());
  }
  json body(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_.at(i);
  }
  std::string authorization(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_.at(i);
  }
  std::string path(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_.at(i);
  }

  // For handlers that must outlast the client's timeout: blocks until Release() (at the latest at
  // teardown) so the test never waits for a fixed long sleep.
  void WaitForRelease(std::chrono::milliseconds max) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, max, [this] { return released_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  static HttpServerOptions Options() {
    HttpServerOptions o;
    o.port = 0;
    o.io_threads = 1;
    o.worker_threads = 8;
    return o;
  }

  HttpResponse Handle(const HttpRequest& r) {
    json body = json::parse(r.body, nullptr, false);
    int n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(body);
      const std::string* auth = r.Header("authorization");
      authorizations_.push_back(auth ? *auth : "");
      paths_.push_back(r.method + " " + r.path);
      n = static_cast<int>(bodies_.size());
    }
    if (body.is_discarded()) return JsonResponse(400, {{"error", {{"message", "bad json"}}}});
    return behaviour_(body, n);
  }

  Behaviour behaviour_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<json> bodies_;
  std::vector<std::string> authorizations_;
  std::vector<std::string> paths_;
  HttpServer server_;  // last: stopped (by the destructor) before the members its handler uses
};

// The JSON document the extractor put in the user message of a recorded request.
json UserPayload(const json& request) {
  return json::parse(request.at("messages").at(1).at("content").get<std::string>());
}
std::string SystemPrompt(const json& request) {
  return request.at("messages").at(0).at("content").get<std::string>();
}

LlmExtractorOptions TestOptions(const std::string& base_url) {
  LlmExtractorOptions o;
  o.chat.base_url = base_url;
  o.chat.model = "test-model";
  o.chat.retry_base = 5ms;  // keep retry tests fast
  return o;
}

std::unique_ptr<LlmExtractor> MakeExtractor(const LlmExtractorOptions& o) {
  auto e = LlmExtractor::Create(o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

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

void ExpectMalformed(const Status& st, const std::string& phase, const std::string& what,
                     const std::string& context) {
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << context << ": " << st.ToString();
  EXPECT_EQ(st.message().rfind("LLM returned malformed " + phase + " output: ", 0), 0u)
      << context << ": " << st.message();
  EXPECT_NE(st.message().find(what), std::string::npos) << context << ": " << st.message();
  EXPECT_EQ(st.message().find(kSecret), std::string::npos) << context << ": " << st.message();
  EXPECT_EQ(st.message().find("Tokyo"), std::string::npos) << context << ": " << st.message();
}

// ---------------------------------------------------------------------------------------------
// ExtractFacts

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
  EXPECT_EQ(*facts,
            std::vector<std::string>({"User moved to Lyon on 2024-03-11", "User is vegetarian"}));

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
  EXPECT_EQ(system.rfind("Task: engram.extract_facts.v1\n", 0), 0u);
  EXPECT_NE(system.find("JSON"), std::string::npos);  // OpenAI's json_object mode requires it
  EXPECT_NE(system.find("{\"facts\": ["), std::string::npos);
  EXPECT_NE(system.find("At most 100 facts"), std::string::npos);

  // Blank messages are left out; each message carries its time with the weekday.
  json payload = UserPayload(req);
  EXPECT_EQ(payload, json({{"messages",
                            {{{"role", "user"},
                              {"time", "2024-03-12 09:30 UTC (Tuesday)"},
                              {"content", "I moved to Lyon yesterday. I'm vegetarian."}},
                             {{"role", "assistant"},
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
            json({{"messages", {{{"role", "user"}, {"content", "hello"}}}}}));
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
    EXPECT_EQ(*facts, std::vector<std::string>({"User likes tea"})) << c;
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
      {"{\"facts\": [\"User lives in " + s + "\", 42]}", "fact 1 is not a string"},
      {"{\"facts\": [{\"text\": \"" + s + "\"}]}", "fact 0 is not a string"},
      {"{\"facts\": [\"User lives in " + s + "\", \"  \"]}", "fact 1 is empty"},
      {"{\"facts\": [null]}", "fact 0 is not a string"},
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

// ---------------------------------------------------------------------------------------------
// Reconcile

std::vector<FactCandidates> ThreeFacts() {
  return {
      {"User likes green tea",
       {{"m-aaaa", "User likes tea", 0.9f}, {"m-bbbb", "User lives in Paris", 0.2f}}},
      {"User lives in Oslo",
       {{"m-bbbb", "User lives in Paris", 0.8f}, {"m-cccc", "User visited Oslo in 2019", 0.6f}}},
      {"User has a dog named Rex", {}},
  };
}

TEST(LlmExtractorTest, ReconcileMapsTemporaryIdsBackAndOrdersByFact) {
  FakeLlm fake([](const json&, int) {
    // Out of order, with one id as a digit string and one event in lower case: all tolerated.
    return JsonCompletion(
        {{"decisions",
          {{{"fact", 2}, {"event", "ADD"}, {"id", nullptr}, {"text", "User has a dog named Rex"}},
           {{"fact", 1}, {"event", "update"}, {"id", "1"}, {"text", "User lives in Oslo"}},
           {{"fact", 0}, {"event", "UPDATE"}, {"id", 0}, {"text", "User likes green tea"}}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto decisions = extractor->Reconcile(ThreeFacts());
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 3u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kUpdate);
  EXPECT_EQ((*decisions)[0].memory_id, "m-aaaa");
  EXPECT_EQ((*decisions)[0].text, "User likes green tea");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kUpdate);
  EXPECT_EQ((*decisions)[1].memory_id, "m-bbbb");
  EXPECT_EQ((*decisions)[1].text, "User lives in Oslo");
  EXPECT_EQ((*decisions)[2].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[2].memory_id, "");
  EXPECT_EQ((*decisions)[2].text, "User has a dog named Rex");

  ASSERT_EQ(fake.requests(), 1);
  std::string system = SystemPrompt(fake.body(0));
  EXPECT_EQ(system.rfind("Task: engram.reconcile_memories.v1\n", 0), 0u);
  EXPECT_NE(system.find("JSON"), std::string::npos);
  EXPECT_EQ(fake.body(0)["response_format"], json({{"type", "json_object"}}));
  // Distinct memories, round-robin by rank, numbered from 0; no real id is shown.
  json payload = UserPayload(fake.body(0));
  EXPECT_EQ(payload["memories"], json({{{"id", 0}, {"text", "User likes tea"}},
                                       {{"id", 1}, {"text", "User lives in Paris"}},
                                       {{"id", 2}, {"text", "User visited Oslo in 2019"}}}));
  EXPECT_EQ(payload["facts"], json({{{"index", 0}, {"text", "User likes green tea"}},
                                    {{"index", 1}, {"text", "User lives in Oslo"}},
                                    {{"index", 2}, {"text", "User has a dog named Rex"}}}));
  EXPECT_EQ(fake.body(0).dump().find("m-aaaa"), std::string::npos);
}

TEST(LlmExtractorTest, ReconcileDeleteAndNoneCarryIdsButNoText) {
  FakeLlm fake([](const json&, int) {
    return JsonCompletion({{"decisions",
                            {{{"fact", 0}, {"event", "DELETE"}, {"id", 1}, {"text", "ignored"}},
                             {{"fact", 1}, {"event", "NONE"}, {"id", 2.0}},
                             {{"fact", 2}, {"event", "ADD"}, {"id", 0}, {"text", "Rex"}}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto decisions = extractor->Reconcile(ThreeFacts());
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 3u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kDelete);
  EXPECT_EQ((*decisions)[0].memory_id, "m-bbbb");
  EXPECT_EQ((*decisions)[0].text, "");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kNone);
  EXPECT_EQ((*decisions)[1].memory_id, "m-cccc");
  EXPECT_EQ((*decisions)[1].text, "");
  EXPECT_EQ((*decisions)[2].action, MemoryAction::kAdd);  // the id on an ADD is ignored
  EXPECT_EQ((*decisions)[2].memory_id, "");
  EXPECT_EQ((*decisions)[2].text, "Rex");
}

TEST(LlmExtractorTest, ReconcileWithoutExistingMemoriesAddsEveryDistinctFactWithoutACall) {
  FakeLlm fake([](const json&, int) { return Completion("unused"); });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto decisions = extractor->Reconcile(
      {{"User likes tea", {}}, {" user likes TEA ", {}}, {"User has a cat", {}}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[0].text, "User likes tea");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[1].text, "User has a cat");
  EXPECT_EQ(fake.requests(), 0);

  auto empty = extractor->Reconcile({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(fake.requests(), 0);
}

TEST(LlmExtractorTest, ReconcileSendsDuplicateFactsOnce) {
  FakeLlm fake([](const json& body, int) {
    json facts = UserPayload(body)["facts"];
    json decisions = json::array();
    for (const json& f : facts) {
      decisions.push_back({{"fact", f["index"]}, {"event", "NONE"}, {"id", 0}});
    }
    return JsonCompletion({{"decisions", decisions}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  std::vector<SimilarMemory> similar = {{"m-1", "User likes tea", 0.99f}};
  auto decisions = extractor->Reconcile(
      {{"User likes tea", similar}, {"User likes tea", similar}, {"User likes coffee", similar}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].memory_id, "m-1");
  EXPECT_EQ((*decisions)[1].memory_id, "m-1");
  EXPECT_EQ(UserPayload(fake.body(0))["facts"].size(), 2u);
  EXPECT_EQ(UserPayload(fake.body(0))["memories"].size(), 1u);
}

TEST(LlmExtractorTest, ReconcileChangesAMemoryAtMostOnce) {
  FakeLlm fake([](const json&, int) {
    return JsonCompletion({{"decisions",
                            {{{"fact", 0}, {"event", "UPDATE"}, {"id", 0}, {"text", "A2"}},
                             {{"fact", 1}, {"event", "UPDATE"}, {"id", 0}, {"text", "A3"}},
                             {{"fact", 2}, {"event", "DELETE"}, {"id", 0}}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  std::vector<SimilarMemory> similar = {{"m-a", "A", 0.9f}};
  auto decisions =
      extractor->Reconcile({{"fact one", similar}, {"fact two", similar}, {"fact three", similar}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 3u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kUpdate);
  EXPECT_EQ((*decisions)[0].memory_id, "m-a");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kAdd);  // second UPDATE of m-a
  EXPECT_EQ((*decisions)[1].memory_id, "");
  EXPECT_EQ((*decisions)[1].text, "A3");
  EXPECT_EQ((*decisions)[2].action, MemoryAction::kNone);  // DELETE after the UPDATE
  EXPECT_EQ((*decisions)[2].memory_id, "m-a");
}

TEST(LlmExtractorTest, ReconcileShowsAtMostMaxExistingMemoriesRoundRobin) {
  FakeLlm fake([](const json& body, int) {
    json decisions = json::array();
    json payload = UserPayload(body);
    for (const json& f : payload["facts"]) {
      decisions.push_back({{"fact", f["index"]}, {"event", "NONE"}, {"id", f["index"]}});
    }
    return JsonCompletion({{"decisions", decisions}});
  });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.max_existing_memories = 2;
  auto extractor = MakeExtractor(o);
  auto decisions =
      extractor->Reconcile({{"f0", {{"m-a", "a", 0.9f}, {"m-b", "b", 0.8f}, {"m-c", "c", 0.7f}}},
                            {"f1", {{"m-d", "d", 0.5f}, {"m-e", "e", 0.4f}}}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  EXPECT_EQ(UserPayload(fake.body(0))["memories"],
            json({{{"id", 0}, {"text", "a"}}, {{"id", 1}, {"text", "d"}}}));
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].memory_id, "m-a");
  EXPECT_EQ((*decisions)[1].memory_id, "m-d");
}

TEST(LlmExtractorTest, MalformedReconcileOutputIsAnError) {
  const std::string s = kSecret;
  auto add = [&](int fact) {
    return json{{"fact", fact}, {"event", "ADD"}, {"id", nullptr}, {"text", s}};
  };
  const std::vector<std::pair<json, std::string>> cases = {
      // Hallucinated ids: a real-looking UUID, a number past the list, a negative number.
      {{{"decisions",
         {{{"fact", 0}, {"event", "UPDATE"}, {"id", "m-3f2a9c1e-" + s}, {"text", s}},
          add(1),
          add(2)}}},
       "decision for fact 0 names an unknown memory id"},
      {{{"decisions", {add(0), {{"fact", 1}, {"event", "NONE"}, {"id", 3}}, add(2)}}},
       "decision for fact 1 names unknown memory id 3"},
      {{{"decisions", {add(0), add(1), {{"fact", 2}, {"event", "DELETE"}, {"id", -1}}}}},
       "decision for fact 2 names unknown memory id -1"},
      // Missing pieces.
      {{{"decisions", {{{"fact", 0}, {"event", "ADD"}}, add(1), add(2)}}},
       "decision for fact 0 has no \"text\""},
      {{{"decisions",
         {{{"fact", 0}, {"event", "UPDATE"}, {"id", 0}, {"text", " "}}, add(1), add(2)}}},
       "decision for fact 0 has an empty \"text\""},
      {{{"decisions", {{{"fact", 0}, {"event", "UPDATE"}, {"text", s}}, add(1), add(2)}}},
       "decision for fact 0 has no memory \"id\""},
      {{{"decisions", {{{"fact", 0}, {"event", "NONE"}, {"id", nullptr}}, add(1), add(2)}}},
       "decision for fact 0 has no memory \"id\""},
      {{{"decisions", {{{"fact", 0}, {"event", "MERGE"}, {"id", 0}, {"text", s}}, add(1), add(2)}}},
       "decision for fact 0 has no valid \"event\""},
      {{{"decisions", {{{"fact", 0}, {"id", 0}}, add(1), add(2)}}},
       "decision for fact 0 has no valid \"event\""},
      // Facts missing, repeated or out of range.
      {{{"decisions", {add(0), add(1)}}}, "expected 3 decisions, got 2"},
      {{{"decisions", {add(0), add(1), add(1)}}}, "decision 2 repeats fact 1"},
      {{{"decisions", {add(0), add(1), add(3)}}}, "decision 2 names fact 3, out of range"},
      {{{"decisions", {add(0), add(1), {{"event", "ADD"}, {"text", s}}}}},
       "decision 2 has no integer \"fact\" index"},
      {{{"decisions", {add(0), add(1), s}}}, "decision 2 is not an object"},
      // Wrong shapes.
      {{{"memory", {add(0), add(1), add(2)}}}, "no \"decisions\" array"},
      {json::array({add(0), add(1), add(2)}), "not a JSON object"},
  };
  for (const auto& [answer, what] : cases) {
    FakeLlm fake([&](const json&, int) { return JsonCompletion(answer); });
    auto extractor = MakeExtractor(TestOptions(fake.base_url()));
    auto decisions = extractor->Reconcile(ThreeFacts());
    ASSERT_FALSE(decisions.ok()) << answer.dump();
    ExpectMalformed(decisions.status(), "reconcile", what, answer.dump());
    EXPECT_EQ(fake.requests(), 1);
  }

  FakeLlm not_json([&](const json&, int) { return Completion("ADD " + s); });
  auto extractor = MakeExtractor(TestOptions(not_json.base_url()));
  auto decisions = extractor->Reconcile(ThreeFacts());
  ASSERT_FALSE(decisions.ok());
  ExpectMalformed(decisions.status(), "reconcile", "not valid JSON", "not json");
}

TEST(LlmExtractorTest, ReconcileRejectsEmptyFacts) {
  auto extractor = MakeExtractor(TestOptions("http://127.0.0.1:1/v1"));
  auto decisions = extractor->Reconcile({{"User likes tea", {}}, {"  ", {}}});
  ASSERT_FALSE(decisions.ok());
  EXPECT_EQ(decisions.status().code(), StatusCode::kInvalidParameter);
}

// ---------------------------------------------------------------------------------------------
// Transport: retries, errors, timeouts

TEST(LlmExtractorTest, RetriesServerErrorsThenSucceeds) {
  FakeLlm fake([](const json&, int n) {
    if (n == 1) return JsonResponse(500, {{"error", {{"message", "overloaded"}}}});
    if (n == 2) return JsonResponse(503, {{"error", {{"message", "loading"}}}});
    return JsonCompletion({{"facts", {"User likes tea"}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto facts = extractor->ExtractFacts({{"user", "I like tea", 0}});
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(*facts, std::vector<std::string>({"User likes tea"}));
  EXPECT_EQ(fake.requests(), 3);
  EXPECT_EQ(fake.body(0), fake.body(2));  // the same request again
}

TEST(LlmExtractorTest, GivesUpAfterMaxRetries) {
  FakeLlm fake([](const json&, int) {
    return JsonResponse(500, {{"error", {{"message", "overloaded"}}}});
  });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.chat.max_retries = 1;
  auto extractor = MakeExtractor(o);
  auto facts = extractor->ExtractFacts({{"user", kSecret, 0}});
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
  const std::string& m = facts.status().message();
  EXPECT_EQ(m.rfind("LLM request failed: chat endpoint http://127.0.0.1:", 0), 0u) << m;
  EXPECT_NE(m.find("/v1/chat/completions answered HTTP 500 (after 2 attempts)"), std::string::npos)
      << m;
  EXPECT_EQ(m.find("overloaded"), std::string::npos) << "the server's words stay out: " << m;
  EXPECT_EQ(m.find(kSecret), std::string::npos) << m;
  EXPECT_EQ(fake.requests(), 2);
}

TEST(LlmExtractorTest, ClientErrorIsNotRetried) {
  FakeLlm fake([](const json&, int) {
    return JsonResponse(400, {{"error",
                               {{"message", "This model's maximum context length is 8192 tokens"},
                                {"type", "invalid_request_error"}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto facts = extractor->ExtractFacts({{"user", kSecret, 0}});
  ASSERT_FALSE(facts.ok());
  // The MemoryExtractor contract has a single error code.
  EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(facts.status().message().find("answered HTTP 400"), std::string::npos)
      << facts.status().message();
  EXPECT_EQ(facts.status().message().find("maximum context"), std::string::npos)
      << facts.status().message();
  EXPECT_EQ(fake.requests(), 1);
}

TEST(LlmExtractorTest, ErrorBodyEchoingTheConversationStaysOutOfTheStatus) {
  // Some endpoints quote the request in their error: none of it may reach the message, which is
  // stored with the event and returned by the API.
  FakeLlm fake([](const json& request, int) {
    const std::string echoed = request.dump();
    return JsonResponse(400, {{"error", {{"message", "cannot process: " + echoed}}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto facts = extractor->ExtractFacts({{"user", kSecret, 0}});
  ASSERT_FALSE(facts.ok());
  const std::string& m = facts.status().message();
  EXPECT_EQ(m.find(kSecret), std::string::npos) << m;
  EXPECT_EQ(m.find("cannot process"), std::string::npos) << m;
  EXPECT_NE(m.find("answered HTTP 400"), std::string::npos) << m;
}

TEST(LlmExtractorTest, RetriesThrottlingAndHonoursRetryAfter) {
  FakeLlm fake([](const json&, int n) {
    if (n == 1) {
      HttpResponse r = JsonResponse(429, {{"error", {{"message", "rate limit"}}}});
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    return JsonCompletion({{"facts", json::array()}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));  // retry_base 5 ms
  auto start = Clock::now();
  auto facts = extractor->ExtractFacts({{"user", "hi", 0}});
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_GE(Clock::now() - start, 950ms);
  EXPECT_EQ(fake.requests(), 2);
}

TEST(LlmExtractorTest, TimesOutAndRetriesWithinBudget) {
  FakeLlm* self = nullptr;
  FakeLlm fake([&](const json&, int) {
    self->WaitForRelease(10s);  // far beyond the client's timeout; released at teardown
    return JsonCompletion({{"facts", json::array()}});
  });
  self = &fake;
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.chat.request_timeout = 300ms;
  o.chat.max_retries = 1;
  auto extractor = MakeExtractor(o);
  auto start = Clock::now();
  auto facts = extractor->ExtractFacts({{"user", "hi", 0}});
  auto elapsed = Clock::now() - start;
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(facts.status().message().find("timed out after 300 ms"), std::string::npos)
      << facts.status().message();
  EXPECT_GE(elapsed, 600ms);  // two attempts of 300 ms each
  EXPECT_LT(elapsed, 3s);
  EXPECT_EQ(fake.requests(), 2);
}

TEST(LlmExtractorTest, UnauthorizedNeverShowsTheKey) {
  FakeLlm fake([](const json&, int) {
    return JsonResponse(401,
                        {{"error", {{"message", "Incorrect API key provided: sk-secret-42"}}}});
  });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.chat.api_key = "sk-secret-42";
  auto extractor = MakeExtractor(o);
  auto facts = extractor->ExtractFacts({{"user", "hi", 0}});
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(facts.status().message().find("sk-secret-42"), std::string::npos)
      << facts.status().message();
  EXPECT_NE(facts.status().message().find("answered HTTP 401"), std::string::npos);
  EXPECT_EQ(fake.authorization(0), "Bearer sk-secret-42");
  EXPECT_EQ(fake.requests(), 1);
}

TEST(LlmExtractorTest, UnreachableEndpointFailsQuickly) {
  uint16_t port;
  {
    FakeLlm closed([](const json&, int) { return Completion("{}"); });
    port = closed.port();
  }  // stopped: nothing listens on `port` now
  LlmExtractorOptions o = TestOptions("http://127.0.0.1:" + std::to_string(port) + "/v1");
  o.chat.max_retries = 1;
  auto extractor = MakeExtractor(o);
  auto start = Clock::now();
  auto facts = extractor->ExtractFacts({{"user", "hi", 0}});
  ASSERT_FALSE(facts.ok());
  EXPECT_EQ(facts.status().code(), StatusCode::kUnavailable);
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(LlmExtractorTest, ResponseLargerThanLimitIsAnError) {
  FakeLlm fake([](const json&, int) {
    return JsonCompletion({{"facts", {std::string(5000, 'x')}}});
  });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.chat.max_response_bytes = 1000;
  auto extractor = MakeExtractor(o);
  auto facts = extractor->ExtractFacts({{"user", "hi", 0}});
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("max_response_bytes"), std::string::npos)
      << facts.status().message();
  EXPECT_EQ(fake.requests(), 1);
}

TEST(LlmExtractorTest, RedirectsAreNotFollowed) {
  FakeLlm fake([](const json&, int) {
    HttpResponse r = JsonResponse(307, json::object());
    r.headers.emplace_back("Location", "http://127.0.0.1:1/elsewhere");
    return r;
  });
  LlmExtractorOptions o = TestOptions(fake.base_url());
  o.chat.api_key = "sk-test";
  auto extractor = MakeExtractor(o);
  auto facts = extractor->ExtractFacts({{"user", "hi", 0}});
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("HTTP 307"), std::string::npos)
      << facts.status().message();
  EXPECT_EQ(fake.requests(), 1);
}

TEST(LlmExtractorTest, ConcurrentCallsFromFourThreads) {
  FakeLlm fake([](const json& body, int) {
    // Echo the conversation back as the fact, so each caller can check it got its own answer.
    std::string content = UserPayload(body)["messages"][0]["content"];
    return JsonCompletion({{"facts", {"User said " + content}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 10;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCallsPerThread; ++c) {
        std::string text = "thread " + std::to_string(t) + " call " + std::to_string(c);
        auto facts = extractor->ExtractFacts({{"user", text, 0}});
        if (!facts.ok() || *facts != std::vector<std::string>{"User said " + text}) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fake.requests(), kThreads * kCallsPerThread);
}

// ---------------------------------------------------------------------------------------------
// ChatClient on its own

TEST(ChatClientTest, OptionalFieldsAreLeftOutWhenUnset) {
  FakeLlm fake([](const json&, int) { return Completion("plain text answer"); });
  ChatClientOptions o;
  o.base_url = fake.base_url() + "/";  // a trailing slash must not produce "//chat"
  o.model = "m";
  o.temperature.reset();
  o.max_tokens = 0;
  auto client = ChatClient::Create(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto answer = (*client)->Complete({{"user", "hello"}}, /*json_output=*/false);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(*answer, "plain text answer");
  EXPECT_EQ(fake.path(0), "POST /v1/chat/completions");
  json req = fake.body(0);
  EXPECT_FALSE(req.contains("temperature"));
  EXPECT_FALSE(req.contains("max_tokens"));
  EXPECT_FALSE(req.contains("response_format"));
  EXPECT_EQ(req["messages"], json({{{"role", "user"}, {"content", "hello"}}}));
}

TEST(ChatClientTest, BadRequestIsInvalidParameter) {
  FakeLlm fake([](const json&, int) {
    return JsonResponse(400, {{"error", {{"message", "response_format is not supported"}}}});
  });
  ChatClientOptions o;
  o.base_url = fake.base_url();
  o.model = "m";
  auto client = ChatClient::Create(o);
  ASSERT_TRUE(client.ok());
  auto answer = (*client)->Complete({{"user", "hello"}}, /*json_output=*/true);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(fake.requests(), 1);
}

TEST(ChatClientTest, CreateRejectsBadOptions) {
  auto code_of = [](ChatClientOptions o) { return ChatClient::Create(o).status().code(); };
  ChatClientOptions good;
  good.base_url = "http://127.0.0.1:1/v1";
  good.model = "m";
  EXPECT_EQ(code_of(good), StatusCode::kOk);

  auto bad = good;
  bad.base_url = "ftp://example.com/v1";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad.base_url = "http://";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad.base_url = "http://host/v1 x";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.model = "";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.api_key = "sk\r\nX-Injected: 1";
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.max_retries = -1;
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.request_timeout = 0ms;
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.temperature = 3.0;
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);
  bad = good;
  bad.max_tokens = -1;
  EXPECT_EQ(code_of(bad), StatusCode::kInvalidParameter);

  LlmExtractorOptions lo;
  lo.chat = good;
  lo.max_facts = 0;
  EXPECT_EQ(LlmExtractor::Create(lo).status().code(), StatusCode::kInvalidParameter);
  lo.max_facts = 1;
  lo.chat.model = "";
  EXPECT_EQ(LlmExtractor::Create(lo).status().code(), StatusCode::kInvalidParameter);
}

// ---------------------------------------------------------------------------------------------
// tests/support/fake_llm.py, the fake the HTTP integration tests use

// The first executable `name` on PATH, or "".
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::string p = path;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return "";
}

// Runs `python3 fake_llm.py --port 0` and reads its LISTENING line. SIGKILLed on destruction.
class FakeLlmProcess {
 public:
  FakeLlmProcess(const std::string& python, const std::string& script) {
    std::vector<std::string> args = {python, script, "--port", "0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
      if (::getppid() != parent) ::_exit(126);
      ::dup2(fds[1], STDOUT_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    if (pid_ < 0) {
      ::close(fds[0]);
      return;
    }
    std::string out;
    auto deadline = Clock::now() + 20s;
    while (out.find('\n') == std::string::npos && Clock::now() < deadline) {
      pollfd pfd{fds[0], POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0) continue;
      char buf[256];
      ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fds[0]);  // the fake prints nothing after this line
    if (out.rfind("LISTENING ", 0) == 0) port_ = std::atoi(out.c_str() + 10);
  }

  ~FakeLlmProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST(FakeLlmScriptTest, DrivesTheExtractorEndToEnd) {
  std::string python = FindOnPath("python3");
  if (python.empty()) GTEST_SKIP() << "python3 not found on PATH";
  const char* source_dir = std::getenv("ENGRAM_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr);
  std::string script = std::string(source_dir) + "/tests/support/fake_llm.py";
  ASSERT_EQ(::access(script.c_str(), R_OK), 0) << script;

  FakeLlmProcess process(python, script);
  ASSERT_GT(process.port(), 0) << "fake_llm.py did not print LISTENING <port>";
  LlmExtractorOptions o = TestOptions("http://127.0.0.1:" + std::to_string(process.port()) + "/v1");
  o.chat.max_retries = 1;
  auto extractor = MakeExtractor(o);

  auto facts = extractor->ExtractFacts({{"user", "I like tea. I live in Oslo!", NowMicros()},
                                        {"assistant", "Noted.", NowMicros()},
                                        {"user", "I like tea.", NowMicros()}});
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(*facts,
            std::vector<std::string>({"User said: I like tea.", "User said: I live in Oslo!"}));

  auto decisions = extractor->Reconcile(
      {{"User said: I like tea.", {{"m-1", "user said: I LIKE tea.", 0.99f}}},
       {"User said: I live in Oslo!", {{"m-1", "user said: I LIKE tea.", 0.2f}}}});
  ASSERT_TRUE(decisions.ok()) << decisions.status().ToString();
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kNone);
  EXPECT_EQ((*decisions)[0].memory_id, "m-1");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[1].text, "User said: I live in Oslo!");

  auto malformed = extractor->ExtractFacts({{"user", "FAKE_LLM_MALFORMED please", 0}});
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("malformed extraction output: not valid JSON"),
            std::string::npos)
      << malformed.status().message();

  auto http500 = extractor->ExtractFacts({{"user", "FAKE_LLM_HTTP500", 0}});
  ASSERT_FALSE(http500.ok());
  EXPECT_NE(http500.status().message().find("HTTP 500"), std::string::npos)
      << http500.status().message();

  LlmExtractorOptions impatient = o;
  impatient.chat.request_timeout = 500ms;
  impatient.chat.max_retries = 0;
  auto slow_extractor = MakeExtractor(impatient);
  auto start = Clock::now();
  auto slow = slow_extractor->ExtractFacts({{"user", "FAKE_LLM_SLOW", 0}});
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.status().message().find("imed out"), std::string::npos) << slow.status().message();
  EXPECT_LT(Clock::now() - start, 3s);
}

}  // namespace
}  // namespace engram
