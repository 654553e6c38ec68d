// The LLM extractor's endpoint: retries, HTTP errors, timeouts and limits, ChatClient on its own,
// and tests/support/fake_llm.py, the fake the HTTP integration tests use.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/time_util.h"
#include "extract/chat_client.h"
#include "extract/llm_extractor.h"
#include "extract/llm_extractor_test_support.h"
#include "server/http_server.h"

namespace engram {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::Completion;
using testing::FakeLlm;
using testing::JsonCompletion;
using testing::JsonResponse;
using testing::kSecret;
using testing::MakeExtractor;
using testing::TestOptions;
using testing::UserPayload;

TEST(LlmExtractorTest, RetriesServerErrorsThenSucceeds) {
  FakeLlm fake([](const json&, int n) {
    if (n == 1) return JsonResponse(500, {{"error", {{"message", "overloaded"}}}});
    if (n == 2) return JsonResponse(503, {{"error", {{"message", "loading"}}}});
    return JsonCompletion({{"facts", {"User likes tea"}}});
  });
  auto extractor = MakeExtractor(TestOptions(fake.base_url()));
  auto facts = extractor->ExtractFacts({{"user", "I like tea", 0}});
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(FactTexts(*facts), std::vector<std::string>({"User likes tea"}));
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
        if (!facts.ok() || FactTexts(*facts) != std::vector<std::string>{"User said " + text})
          ++failures;
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
  EXPECT_EQ(FactTexts(*facts),
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
