// The `messages` field shared by the memory and skill APIs: a string (one user message), one
// {role, content} object, or an array of them; roles user / assistant / system. Each message may
// also carry "name" (the speaker, 1-64 bytes) and "timestamp" (when it was said: Unix seconds or
// ISO 8601); without one a message takes the request's time.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "common/status.h"
#include "extract/memory_extractor.h"

namespace engram {

struct ConversationLimits {
  size_t max_messages = 1000;
  size_t max_message_bytes = 64 << 10;
};

// Reads body["messages"]. kInvalidParameter naming the field (e.g. "messages[2].role") when it is
// missing, of the wrong shape, over the limits, not UTF-8, or when no message has any text.
Result<std::vector<ConversationMessage>> ParseConversation(const nlohmann::json& body,
                                                           const ConversationLimits& limits);

}  // namespace engram
