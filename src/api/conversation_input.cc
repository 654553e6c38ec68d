#include "api/conversation_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/json_input.h"
#include "common/time_util.h"

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
  ConversationMessage out{**role, **content, 0, ""};
  // The speaker's name (OpenAI's message field): facts about a named speaker use the name.
  auto name = GetString(m, "name", path + ".name", {.required = false, .max_bytes = 64});
  if (!name.ok()) return name.status();
  if (*name) {
    const std::string& n = **name;
    const bool control = std::any_of(n.begin(), n.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (!IsValidUtf8(n) || control || IsBlank(n)) {
      return Status::InvalidParameter(fmt::format(
          "{}.name must be a speaker's name: 1 to 64 bytes of UTF-8 without control characters",
          path));
    }
    out.name = n;
  }
  // When the message was said: the conversation's own clock for relative dates ("yesterday").
  if (auto ts = m.find("timestamp"); ts != m.end() && !ts->is_null()) {
    std::optional<int64_t> micros;
    if (ts->is_number()) {
      const double seconds = ts->get<double>();
      if (seconds >= 0 && seconds <= 253402300799.0) micros = std::llround(seconds * 1e6);
    } else if (ts->is_string()) {
      micros = ParseIsoToMicros(ts->get_ref<const std::string&>());
    }
    if (!micros) {
      return Status::InvalidParameter(
          fmt::format("{}.timestamp must be Unix seconds (0 to 253402300799) or an ISO 8601 "
                      "date-time, e.g. 2024-05-01T10:00:00Z",
                      path));
    }
    out.time_us = *micros;
  }
  return out;
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
