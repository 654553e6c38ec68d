#include "extract/chat_client.h"

#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "common/json_reader.h"

namespace engram {
namespace {

using json = nlohmann::json;

std::string RequestBody(const ChatClientOptions& options, const std::vector<ChatMessage>& messages,
                        bool json_output) {
  json msgs = json::array();
  for (const ChatMessage& m : messages) {
    msgs.push_back({{"role", m.role}, {"content", m.content}});
  }
  json body = {{"model", options.model}, {"messages", std::move(msgs)}, {"stream", false}};
  if (options.temperature) body["temperature"] = *options.temperature;
  if (options.max_tokens > 0) body["max_tokens"] = options.max_tokens;
  if (json_output) body["response_format"] = {{"type", "json_object"}};
  // Invalid UTF-8 in a message would make dump() throw; U+FFFD keeps the rest usable.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The first choice's content. Messages name what is wrong, never the content itself.
Result<std::string> ParseResponse(const std::string& body) {
  auto bad = [](const std::string& why) {
    return Status::Unavailable("malformed chat completion response: " + why);
  };
  auto parsed = ReadJson(body, kServiceResponseLimits);
  if (!parsed.ok()) return bad(parsed.status().message());
  const json& j = *parsed;
  if (!j.is_object()) return bad("not a JSON object");
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) return bad("no \"choices\" array");
  if (choices->empty()) return bad("empty \"choices\"");
  const json& choice = choices->front();
  if (!choice.is_object()) return bad("choice is not an object");
  auto message = choice.find("message");
  if (message == choice.end() || !message->is_object()) return bad("no \"message\" object");

  auto finish = choice.find("finish_reason");
  if (finish != choice.end() && finish->is_string()) {
    const std::string& reason = finish->get_ref<const std::string&>();
    // A cut-off answer is usually half a JSON document: better a clear error than a parse error.
    if (reason == "length") {
      return Status::Unavailable(
          "chat completion cut off at max_tokens (finish_reason \"length\")");
    }
    if (reason == "content_filter") {
      return Status::Unavailable(
          "chat completion withheld by the provider's content filter (finish_reason "
          "\"content_filter\")");
    }
  }
  auto content = message->find("content");
  if (content != message->end() && content->is_string()) return content->get<std::string>();
  auto refusal = message->find("refusal");
  if (refusal != message->end() && refusal->is_string()) {
    return Status::Unavailable("the model refused to answer");
  }
  return bad("message has no string \"content\"");
}

}  // namespace

ChatClient::ChatClient(ChatClientOptions options, std::unique_ptr<JsonPostClient> http)
    : options_(std::move(options)), http_(std::move(http)) {}

ChatClient::~ChatClient() = default;

Result<std::unique_ptr<ChatClient>> ChatClient::Create(ChatClientOptions options) {
  auto invalid = [](const std::string& m) { return Status::InvalidParameter("chat client: " + m); };
  ENGRAM_RETURN_IF_ERROR(CheckBaseUrl(options.base_url, "chat client: "));
  if (options.model.empty()) return invalid("model must not be empty");
  if (options.temperature && !(*options.temperature >= 0 && *options.temperature <= 2)) {
    return invalid("temperature must be between 0 and 2");
  }
  if (options.max_tokens < 0) return invalid("max_tokens must be >= 0");
  auto http =
      JsonPostClient::Create({.url = TrimTrailingSlashes(options.base_url) + "/chat/completions",
                              .api_key = options.api_key,
                              .label = "chat endpoint",
                              .connect_timeout = options.connect_timeout,
                              .request_timeout = options.request_timeout,
                              .max_retries = options.max_retries,
                              .retry_base = options.retry_base,
                              .max_response_bytes = options.max_response_bytes},
                             "chat client: ");
  if (!http.ok()) return http.status();
  // The constructor is private (only Create validates), so make_unique cannot reach it.
  return std::unique_ptr<ChatClient>(new ChatClient(std::move(options), std::move(*http)));
}

Result<std::string> ChatClient::Complete(const std::vector<ChatMessage>& messages,
                                         bool json_output) const {
  auto body = http_->Post(RequestBody(options_, messages, json_output));
  if (!body.ok()) return body.status();
  Result<std::string> content = ParseResponse(*body);
  if (!content.ok()) {
    return Status(content.status().code(), http_->where() + ": " + content.status().message());
  }
  return content;
}

}  // namespace engram
