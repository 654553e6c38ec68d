// Test-only helpers shared by the LlmExtractor tests (llm_extractor_test.cc,
// llm_extractor_reconcile_test.cc, llm_extractor_transport_test.cc): FakeLlm, an in-process
// OpenAI-compatible chat-completions endpoint, the completions it answers with, and the checks
// that a malformed answer becomes an error that never quotes the conversation.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "extract/llm_extractor.h"
#include "server/http_server.h"

namespace engram::testing {

using json = nlohmann::json;

// Text that must never leak into a Status: it stands for the user's conversation and memories.
inline constexpr const char* kSecret = "SECRET-Tokyo-4711";

inline HttpResponse JsonResponse(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

// A chat completion whose assistant message is `content`.
inline HttpResponse Completion(const std::string& content,
                               const std::string& finish_reason = "stop") {
  return JsonResponse(200, {{"id", "chatcmpl-1"},
                            {"object", "chat.completion"},
                            {"choices",
                             {{{"index", 0},
                               {"message", {{"role", "assistant"}, {"content", content}}},
                               {"finish_reason", finish_reason}}}}});
}

inline HttpResponse JsonCompletion(const json& content) { return Completion(content.dump()); }

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
    server_.Stop(std::chrono::milliseconds(1000));
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
inline json UserPayload(const json& request) {
  return json::parse(request.at("messages").at(1).at("content").get<std::string>());
}

inline std::string SystemPrompt(const json& request) {
  return request.at("messages").at(0).at("content").get<std::string>();
}

inline LlmExtractorOptions TestOptions(const std::string& base_url) {
  LlmExtractorOptions o;
  o.chat.base_url = base_url;
  o.chat.model = "test-model";
  o.chat.retry_base = std::chrono::milliseconds(5);  // keep retry tests fast
  return o;
}

inline std::unique_ptr<LlmExtractor> MakeExtractor(const LlmExtractorOptions& o) {
  auto e = LlmExtractor::Create(o);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e).value() : nullptr;
}

inline void ExpectMalformed(const Status& st, const std::string& phase, const std::string& what,
                            const std::string& context) {
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << context << ": " << st.ToString();
  EXPECT_EQ(st.message().rfind("LLM returned malformed " + phase + " output: ", 0), 0u)
      << context << ": " << st.message();
  EXPECT_NE(st.message().find(what), std::string::npos) << context << ": " << st.message();
  EXPECT_EQ(st.message().find(kSecret), std::string::npos) << context << ": " << st.message();
  EXPECT_EQ(st.message().find("Tokyo"), std::string::npos) << context << ": " << st.message();
}

}  // namespace engram::testing
