#include "modules/llm_endpoint.h"

#include <chrono>

namespace engram {

ChatClientOptions LlmChatOptions(const ServeOptions& options) {
  ChatClientOptions chat;
  chat.base_url = options.llm_url;
  chat.model = options.llm_model;
  chat.api_key = options.llm_api_key;
  chat.request_timeout = std::chrono::milliseconds(options.llm_timeout_ms);
  chat.max_retries = options.llm_retries;
  return chat;
}

}  // namespace engram
