// The LLM extractor end to end: a server configured with --extractor llm against
// tests/support/fake_llm.py (a fake OpenAI-compatible chat endpoint). A well-formed answer adds
// memories; a malformed one or an unreachable endpoint fails the event cleanly with an
// error_message and stores nothing.
#include <chrono>
#include <thread>

#include "python_fake.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kPrefix = "/v4/openapi/workspaces/default/memory/agentic-memory";

json WaitEvent(const HttpClient& client, const std::string& id) {
  json last;
  for (int i = 0; i < 1000; ++i) {
    last = client.Get(kPrefix + "/events/" + id).Json();
    const std::string status = last.value("status", "");
    if (status == "SUCCEEDED" || status == "FAILED") break;
    std::this_thread::sleep_for(20ms);
  }
  return last;
}

std::string Add(const HttpClient& client, const json& body) {
  HttpResponse r = client.Post(kPrefix + "/memories/add", body);
  EXPECT_EQ(r.status, 200) << r.Describe();
  return r.Json().value("event_id", "");
}

TEST(MemoryLlmTest, ExtractsThroughTheEndpointAndFailsCleanlyOnNonsense) {
  ENGRAM_REQUIRE_BINARY();
  PythonFake llm("fake_llm.py");
  if (llm.port() == 0) GTEST_SKIP() << "python3 or tests/support/fake_llm.py not available";
  ServerProcess server(
      {.extra_args = {"--extractor", "llm", "--llm-url", llm.Url("/v1"), "--llm-model", "fake",
                      "--llm-retries", "0", "--llm-timeout-ms", "3000"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("u");

  json ok = WaitEvent(
      client, Add(client, {{"messages", "I like green tea. I live in Oslo."}, {"user_id", user}}));
  ASSERT_EQ(ok.value("status", ""), "SUCCEEDED") << ok.dump();
  ASSERT_EQ(ok["events"].size(), 2u) << ok.dump();
  EXPECT_EQ(ok["events"][0]["event"], "ADD");
  EXPECT_EQ(ok["events"][0]["memory"], "User said: I like green tea.");

  // The same facts again: the endpoint decides NONE against the existing memories.
  json again =
      WaitEvent(client, Add(client, {{"messages", "I like green tea."}, {"user_id", user}}));
  ASSERT_EQ(again.value("status", ""), "SUCCEEDED") << again.dump();
  ASSERT_EQ(again["events"].size(), 1u);
  EXPECT_EQ(again["events"][0]["event"], "NONE");

  json bad = WaitEvent(client,
                       Add(client, {{"messages", "FAKE_LLM_MALFORMED please"}, {"user_id", user}}));
  EXPECT_EQ(bad.value("status", ""), "FAILED") << bad.dump();
  EXPECT_TRUE(bad["error_message"].is_string() && !bad["error_message"].get<std::string>().empty());
  EXPECT_EQ(bad["error_message"].get<std::string>().find("please"), std::string::npos)
      << "conversation text leaked into the error";

  json broken =
      WaitEvent(client, Add(client, {{"messages", "FAKE_LLM_HTTP500"}, {"user_id", user}}));
  EXPECT_EQ(broken.value("status", ""), "FAILED") << broken.dump();

  // Nothing beyond the first two memories was stored.
  EXPECT_EQ(client.Get(kPrefix + "/memories?user_id=" + user).Json()["total"], 2);
}

// An endpoint whose error quotes the request: the event's error_message (stored and returned)
// says what happened in fixed words and carries none of the conversation.
TEST(MemoryLlmTest, ErrorEchoingTheRequestLeavesNoConversationInTheEvent) {
  ENGRAM_REQUIRE_BINARY();
  PythonFake llm("fake_llm.py");
  if (llm.port() == 0) GTEST_SKIP() << "python3 or tests/support/fake_llm.py not available";
  ServerProcess server(
      {.extra_args = {"--extractor", "llm", "--llm-url", llm.Url("/v1"), "--llm-model", "fake",
                      "--llm-retries", "0", "--llm-timeout-ms", "3000"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("u");
  const std::string secret = UniqueWord();
  json failed =
      WaitEvent(client, Add(client, {{"messages", "FAKE_LLM_ECHO400 my locker code is " + secret},
                                     {"user_id", user}}));
  ASSERT_EQ(failed.value("status", ""), "FAILED") << failed.dump();
  const std::string message = failed.value("error_message", "");
  EXPECT_NE(message.find("HTTP 400"), std::string::npos) << message;
  for (const std::string& leaked : {secret, std::string("locker"), std::string("FAKE_LLM_ECHO400"),
                                    std::string("cannot process")}) {
    EXPECT_EQ(message.find(leaked), std::string::npos)
        << "leaked \"" << leaked << "\": " << message;
  }
  EXPECT_EQ(server.Output().find(secret), std::string::npos) << "the log holds conversation text";
}

// An event killed mid-extraction (the endpoint takes 5 s) runs again after the restart.
TEST(MemoryLlmTest, EventInterruptedByKill9RunsAgainAfterRestart) {
  ENGRAM_REQUIRE_BINARY();
  PythonFake llm("fake_llm.py");
  if (llm.port() == 0) GTEST_SKIP() << "python3 or tests/support/fake_llm.py not available";
  ServerProcess server(
      {.extra_args = {"--extractor", "llm", "--llm-url", llm.Url("/v1"), "--llm-model", "fake",
                      "--llm-retries", "0", "--llm-timeout-ms", "20000"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("u");
  const std::string id =
      Add(client, {{"messages", "FAKE_LLM_SLOW I collect stamps."}, {"user_id", user}});
  ASSERT_FALSE(id.empty());
  std::this_thread::sleep_for(500ms);
  json running = client.Get(kPrefix + "/events/" + id).Json();
  EXPECT_EQ(running.value("status", ""), "RUNNING") << running.dump();
  server.Kill();
  ASSERT_TRUE(server.Start());
  client.set_base_url(server.BaseUrl());
  json done = WaitEvent(client, id);
  EXPECT_EQ(done.value("status", ""), "SUCCEEDED") << done.dump();
  EXPECT_NE(server.Output().find("resuming 1 unfinished event"), std::string::npos);
  EXPECT_EQ(client.Get(kPrefix + "/memories?user_id=" + user).Json()["total"], 1);
}

}  // namespace
}  // namespace engram::testing
