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
#include "fake_openai_endpoint.h"
#include "server/http_server.h"

namespace engram::testing {

using json = nlohmann::json;

// Text that must never leak into a Status: it stands for the user's conversation and memories.
inline constexpr const char* kSecret = "SECRET-Tokyo-4711";

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

// The endpoint the extractor tests talk to (tests/support/fake_openai_endpoint.h).
using FakeLlm = FakeOpenAiEndpoint;

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
