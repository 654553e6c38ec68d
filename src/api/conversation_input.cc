#include "api/conversation_input.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/json_input.h"

namespace engram {

namespace {

using json = nlohmann::json;

Result<ConversationMessage> ParseMessage(const json& m, const std::string& path,
                                         const ConversationLimits& limits) {
  if (!m.is_object()) {
    return Status::InvalidParameter(
        fmt::format("{} must be an object with role and content, got {}", path, JsonTypeName(m)));
  }
  auto role = GetString(m, "role", path + ".role", {.max_bytes = 32});
  if (!role.ok()) return role.status();
  if (**role != "user" && **role != "assistant" && **role != "system") {
    return Status::InvalidParameter(
        fmt::format("{}.role must be one of user, assistant, system", path));
  }
  auto content = GetString(m, "content", path + ".content",
                           {.allow_empty = true, .max_bytes = limits.max_message_bytes});
  if (!content.ok()) return content.status();
  if (!IsValidUtf8(**content)) {
    return Status::InvalidParameter(fmt::format("{}.content must be valid UTF-8", path));
  }
  return ConversationMessage{**role, **content, 0};
}

}  // namespace

Result<std::vector<ConversationMessage>> ParseConversation(const json& j,
                                                           const ConversationLimits& limits) {
  std::vector<ConversationMessage> out;
  const auto it = j.find("messages");
  if (it == j.end() || it->is_null()) return Status::InvalidParameter("messages is required");
  if (it->is_string()) {
    auto text = GetString(j, "messages", "messages", {.max_bytes = limits.max_message_bytes});
    if (!text.ok()) return text.status();
    if (!IsValidUtf8(**text)) return Status::InvalidParameter("messages must be valid UTF-8");
    out.push_back({"user", **text, 0});
  } else if (it->is_object()) {
    auto m = ParseMessage(*it, "messages", limits);
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  } else if (it->is_array()) {
    if (it->empty()) return Status::InvalidParameter("messages must not be empty");
    if (it->size() > limits.max_messages) {
      return Status::InvalidParameter(fmt::format("messages has {} items, at most {} allowed",
                                                  it->size(), limits.max_messages));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      auto m = ParseMessage((*it)[i], fmt::format("messages[{}]", i), limits);
      if (!m.ok()) return m.status();
      out.push_back(std::move(*m));
    }
  } else {
    return Status::InvalidParameter(fmt::format(
        "messages must be a string, a {{role, content}} object or an array of them, got {}",
        JsonTypeName(*it)));
  }
  bool any_content = false;
  for (const auto& m : out) any_content = any_content || !IsBlank(m.content);
  if (!any_content) return Status::InvalidParameter("messages must contain some text");
  return out;
}

}  // namespace engram
