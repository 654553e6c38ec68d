// ChatClient: one call to an OpenAI-compatible POST {base_url}/chat/completions endpoint (OpenAI,
// vLLM, Ollama, llama.cpp server, LiteLLM, DashScope compatible mode, ...), returning the
// assistant message's text.
//
// Request:  {"model": M, "messages": [{"role", "content"}...], "temperature": T, "max_tokens": N,
//            "stream": false[, "response_format": {"type": "json_object"}]}
// Response: {"choices": [{"message": {"content": "..."}, "finish_reason": "stop"}, ...]}; the first
//           choice is used.
//
// Behaviour worth knowing (the transport is net/json_post_client.h, shared with OpenAiEmbedder):
//  - Retries: connection failures, timeouts, 429 and 5xx are retried up to max_retries times with
//    exponential backoff and jitter (a Retry-After of up to 30 s is honoured). Worst-case latency
//    of one call is about (max_retries + 1) * request_timeout + backoff.
//  - Other 4xx are not retried: 400/413/422 → kInvalidParameter (the request is at fault, e.g. a
//    conversation longer than the model's context), anything else (401, 403, 404, redirects) →
//    kUnavailable (the endpoint is misconfigured). Errors carry an excerpt of the server's message
//    (≤ 200 bytes, API key masked).
//  - A 2xx answer without usable content (not JSON, no choices, null content, a refusal, or cut
//    short by finish_reason "length" / "content_filter") → kUnavailable, not retried: at
//    temperature 0 the same request would most likely get the same answer.
//  - Redirects are not followed (they could forward the Authorization header elsewhere).
//  - Message texts and the API key are never logged or put into a Status.
//
// Thread-safety: Complete is safe to call concurrently; requests run in parallel on a small pool of
// reused libcurl handles (keep-alive, TLS session reuse).
// Ownership: the client owns its libcurl handles; callers own the returned strings.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/json_post_client.h"

namespace engram {

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

struct ChatClientOptions {
  // Base of the API, e.g. "http://127.0.0.1:11434/v1" or "https://api.openai.com/v1"; the client
  // POSTs to base_url + "/chat/completions" (a trailing '/' is tolerated). http:// or https://.
  std::string base_url;
  // Sent as "model"; must be non-empty.
  std::string model;
  // Sent as "Authorization: Bearer <key>" when non-empty.
  std::string api_key;
  std::chrono::milliseconds connect_timeout{2000};
  // Whole request, connect included. Generous: local models on a CPU take tens of seconds.
  std::chrono::milliseconds request_timeout{120000};
  // Retries after the first attempt on connection errors, timeouts, 429 and 5xx; >= 0. The n-th
  // retry waits retry_base * 2^(n-1), jittered to between half and all of that.
  int max_retries = 2;
  std::chrono::milliseconds retry_base{500};
  // Decoded response bodies beyond this abort the request (kUnavailable, not retried).
  size_t max_response_bytes = 4 << 20;
  // Sent as "temperature" when set (0: as deterministic as the server allows). Unset for models
  // that accept only their default (some reasoning models reject any other value).
  std::optional<double> temperature = 0.0;
  // Sent as "max_tokens" when > 0; 0 leaves the server's default.
  int max_tokens = 4096;
};

class ChatClient {
 public:
  // Validates options (kInvalidParameter with a message naming the option). Sends nothing.
  static Result<std::unique_ptr<ChatClient>> Create(ChatClientOptions options);

  ~ChatClient();
  ChatClient(const ChatClient&) = delete;
  ChatClient& operator=(const ChatClient&) = delete;

  const ChatClientOptions& options() const { return options_; }

  // Thread-safe. Sends `messages` and returns the first choice's message content (may be empty).
  // json_output adds response_format {"type": "json_object"}; OpenAI then requires the word "JSON"
  // to appear in the messages. Errors: see the header comment.
  Result<std::string> Complete(const std::vector<ChatMessage>& messages, bool json_output) const;

 private:
  ChatClient(ChatClientOptions options, std::unique_ptr<JsonPostClient> http);

  const ChatClientOptions options_;
  const std::unique_ptr<JsonPostClient> http_;
};

}  // namespace engram
